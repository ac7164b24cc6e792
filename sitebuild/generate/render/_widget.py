"""What every widget's HTML shares (issue 39): the figure that holds it and its sliders.

A widget is a ``<figure data-widget=NAME>`` with its data for the script (JSON), its controls and
its default state, built with the site: without a script (print, PDF, a reader who never scrolls
to it) the page shows that state. docs/assets/page-init.js loads the scripts named in
``data-widget-src`` when the figure comes near the viewport.
"""

from __future__ import annotations


def slider(label: str, name: str, values: list, value, shown: str = "g") -> str:
    """A range over the positions of ``values`` (the value itself is shown and announced, formatted
    with ``shown``: "," writes 1,048,576 where "g" would write 1.04858e+06)."""
    text = format(value, shown)
    return (f'<label>{label} <input type="range" name="{name}" min="0" max="{len(values) - 1}" step="1" '
            f'value="{values.index(value)}" aria-valuetext="{text}"> <output>{text}</output></label>')


def figure(name: str, scripts: str, data: str, controls: str, view: str, caption: str) -> str:
    """A widget: its data for the script, its controls, its default state, kept out of the search index."""
    return (f'<figure class="widget widget-{name}" data-widget="{name}" data-widget-src="{scripts}" '
            f'data-search-exclude>'
            f'<script type="application/json" class="widget-data">{data}</script>'
            f'<div class="widget-controls">{controls}</div>{view}<figcaption>{caption}</figcaption></figure>\n')
