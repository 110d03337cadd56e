// A chat handler asks memctx for the context of a new message (node 18+; the same fetch call works
// in a Supabase Edge Function or any runtime with fetch).
const base = process.env.MEMCTX_API_URL;
const key = process.env.MEMCTX_API_KEY;

async function workingContext(conversation, query, tokenBudget) {
  const response = await fetch(`${base}/v1/conversations/${encodeURIComponent(conversation)}/context`, {
    method: "POST",
    headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
    body: JSON.stringify({ query, token_budget: tokenBudget }),
  });
  if (!response.ok) throw new Error(`memctx answered ${response.status}: ${await response.text()}`);
  return response.json();
}

const context = await workingContext("support-42", "How many people is the table for?", 2000);
console.log(JSON.stringify(context.messages)); // the messages to send to the model
