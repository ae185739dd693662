"""The Settings form takes bounds, defaults and help from the config description, nowhere else."""

from __future__ import annotations

from pathlib import Path

from rag.config import setting_specs
from tests.app.conftest import open_app
from ui.settings_form import WIDGET_PREFIX

PAGE = "pages/settings.py"


def test_every_widget_shows_the_described_bounds_and_help(app_data: Path) -> None:
    app = open_app(PAGE)
    app.run()
    assert not app.exception
    specs = setting_specs()
    seen = 0
    for kind in ("slider", "number_input", "toggle", "selectbox", "text_input"):
        for widget in getattr(app, kind):
            if not (widget.key or "").startswith(WIDGET_PREFIX):
                continue
            spec = specs[widget.key[len(WIDGET_PREFIX):]]
            seen += 1
            assert spec.help in (widget.help or ""), widget.key
            if kind in ("slider", "number_input"):
                assert (widget.min, widget.max) == (spec.minimum, spec.maximum), widget.key
                assert widget.value == spec.default, widget.key
    assert seen == len([k for k in specs if not k.startswith("storage.")])


def test_a_value_the_form_cannot_show_is_still_refused_by_validation(app_data: Path) -> None:
    """The number box caps at the described ceiling; apply validates the same bounds."""
    app = open_app(PAGE)
    app.run()
    box = next(w for w in app.number_input if w.key == WIDGET_PREFIX + "llm.n_ctx")
    assert box.max == 131072
    box.set_value(131072)
    next(b for b in app.button if b.label == "Apply settings").click().run()
    assert not app.exception and not app.error
