"""MkDocs hook (mkdocs.yml `hooks:`): every page of docs/ that the nav does not list joins the nav's
"More guides" section, in name order, so helpers' pages (records.md, security.md, ...) need no nav edit."""

from __future__ import annotations

from typing import Any


def _listed(items: Any) -> set[str]:
    out: set[str] = set()
    for item in items or []:
        value = next(iter(item.values())) if isinstance(item, dict) else item
        if isinstance(value, list):
            out |= _listed(value)
        elif isinstance(value, str):
            out.add(value)
    return out


def on_files(files: Any, config: Any) -> Any:
    listed = _listed(config["nav"])
    extra = sorted(f.src_uri for f in files.documentation_pages() if f.src_uri not in listed)
    for section in config["nav"]:
        if isinstance(section, dict) and "More guides" in section:
            section["More guides"] = extra
    if not extra:  # an empty section would be shown as a heading with nothing under it
        config["nav"] = [s for s in config["nav"] if not (isinstance(s, dict) and "More guides" in s)]
    return files
