"""%load_ext sds_jupyter and %sds_open on a real IPython shell."""

from __future__ import annotations

import json

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

pytest_plugins = ["fixtures_service"]


@pytest.fixture
def shell(recorded_messages):
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "sds_jupyter")
    shown: list[object] = []
    shell.display_pub.publish = lambda data, metadata=None, **kwargs: shown.append(data)  # type: ignore[method-assign]
    shell.shown = shown
    yield shell
    for name in ("adata", "tbl"):
        shell.user_ns.pop(name, None)


def test_sds_open_binds_adata_and_shows_the_browser(shell, studio_stack) -> None:
    shell.run_line_magic("sds_open", f'"{studio_stack.v2}"')
    assert "added_col" in shell.user_ns["adata"].obs
    assert any("application/vnd.jupyter.widget-view+json" in data for data in shell.shown)


def test_sds_open_as_name(shell, studio_stack) -> None:
    shell.run_line_magic("sds_open", f"{studio_stack.v1} --as tbl")
    assert "score" in shell.user_ns["tbl"].obs and "adata" not in shell.user_ns


def test_sds_open_with_folder_map(shell, named_datasets) -> None:
    datasets, folders = named_datasets
    shell.run_line_magic("sds_open", f"'{datasets / 'Edit'}' --folders '{json.dumps(folders)}'")
    assert "added_col" in shell.user_ns["adata"].obs


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("/no/such/version", "does not exist"),
        ("", "sds_open: .*path"),
        ("{v2} --as 'not a name'", "--as needs a Python name"),
        ("{v2} --folders '{{nope'", "--folders is not JSON"),
        ("{v2} --folders '[1]'", "--folders must be a JSON object"),
    ],
)
def test_sds_open_bad_input_is_one_line(shell, studio_stack, line, message) -> None:
    with pytest.raises(UsageError, match=message) as info:
        shell.run_line_magic("sds_open", line.format(v2=studio_stack.v2))
    assert "\n" not in str(info.value)


def test_sds_open_missing_parent_shows_what_resolves_and_binds_nothing(shell, orphan_version, capsys) -> None:
    shell.user_ns.pop("adata", None)
    shell.run_line_magic("sds_open", str(orphan_version))
    out = capsys.readouterr().out
    assert "bound nothing to 'adata'" in out and "studio-1111" in out and "attach it in the workspace" in out
    assert "adata" not in shell.user_ns
    assert shell.shown, "the browser is displayed"


def test_sds_open_unbuilt_front_end_is_one_line(shell, studio_stack, monkeypatch, tmp_path) -> None:
    from sds_jupyter import widget

    monkeypatch.setattr(widget, "_CSS_PATH", tmp_path / "widget.css")
    with pytest.raises(UsageError, match="front end is not built"):
        shell.run_line_magic("sds_open", str(studio_stack.v2))


def test_sds_open_an_object_storage_url(shell, s3_studio_stack, s3_options) -> None:
    import json as json_module

    shell.run_line_magic("sds_open", f"{s3_studio_stack} --storage-options '{json_module.dumps(s3_options)}'")
    assert "added_col" in shell.user_ns["adata"].obs


def test_sds_open_bad_storage_options(shell, studio_stack) -> None:
    with pytest.raises(UsageError, match="--storage-options must be a JSON object"):
        shell.run_line_magic("sds_open", f"{studio_stack.v2} --storage-options '[1]'")
