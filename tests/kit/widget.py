"""The widget's comm as a kernel drives it: custom messages in, replies out."""

from __future__ import annotations

from typing import Any

from sds_jupyter.widget import VersionBrowser


def deliver(browser: VersionBrowser, content: dict[str, Any]) -> None:
    """Hand a custom message to the widget the way ipywidgets does for a kernel."""
    browser._handle_msg({"content": {"data": {"method": "custom", "content": content}}, "buffers": []})


def widget_replies(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {**m["data"]["content"], "buffers": m["buffers"]}
        for m in messages
        if m["msg_type"] == "comm_msg" and m["data"].get("method") == "custom"
    ]
