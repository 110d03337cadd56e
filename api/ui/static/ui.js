// The summary board, live: poll the conversation's version; when the worker has written, redraw
// the page in place (open <details> stay open). Busy labels on actions. No libraries.
document.addEventListener("submit", (ev) => {
  const form = ev.target;
  if (form.dataset.confirm && !confirm(form.dataset.confirm)) { ev.preventDefault(); return; }
  const button = form.querySelector("button");
  if (form.dataset.busy && button) { button.disabled = true; button.textContent = form.dataset.busy; }
});
const live = document.body.dataset.live;
async function refresh() {
  const r = await fetch(live, { cache: "no-store" });
  if (!r.ok) return;
  const { version, pending } = await r.json();
  document.querySelectorAll("[data-pending]").forEach((el) => { el.hidden = !pending; });
  document.querySelectorAll("[data-pending-text]").forEach((el) => { el.textContent = `Summarizing: ${pending} new messages pending`; });
  if (version === document.body.dataset.version || document.activeElement.matches("textarea, input")) return;
  const page = new DOMParser().parseFromString(await (await fetch(location.href)).text(), "text/html");
  const open = [...document.querySelectorAll("details[open][id]")].map((d) => d.id);
  document.getElementById("main").replaceWith(page.getElementById("main"));
  open.forEach((id) => document.getElementById(id)?.setAttribute("open", ""));
  document.body.dataset.version = version;
}
if (live) setInterval(() => refresh().catch(() => {}), 2000);  // signed out or offline: try again later
