"""Web search's settings are named web_* (memory search's are search_*); their earlier search_*
names still work, from the environment and as keyword arguments, and the new name wins."""

from memctx.config import OLD_WEB_NAMES, Settings


def test_the_old_environment_names_still_work(monkeypatch):
    monkeypatch.setenv("MEMCTX_SEARCH_ENGINES", "searxng,brave")
    monkeypatch.setenv("MEMCTX_SEARCH_DEADLINE_S", "3")
    settings = Settings()
    assert settings.web_engines == ["searxng", "brave"] and settings.web_deadline_s == 3.0
    monkeypatch.setenv("MEMCTX_WEB_ENGINES", "duckduckgo")
    assert Settings().web_engines == ["duckduckgo"]


def test_the_old_keyword_names_still_work_and_the_new_one_wins(monkeypatch):
    monkeypatch.setenv("MEMCTX_WEB_ENGINES", "duckduckgo")
    assert Settings(search_engines=["brave"]).web_engines == ["brave"]  # a keyword beats the environment
    assert Settings(search_allow_private=True).web_allow_private is True
    assert Settings(search_allow_private=True, web_allow_private=False).web_allow_private is False


def test_every_old_name_maps_to_a_web_setting():
    assert all(new in Settings.model_fields and old not in Settings.model_fields for old, new in OLD_WEB_NAMES.items())
