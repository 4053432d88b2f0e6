"""%load_ext sds_jupyter and %sds_open on a real IPython shell."""

from __future__ import annotations

import json

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

pytest_plugins = ["kit.fixtures_service"]


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
    assert "bound nothing to 'adata'" in out and "studio-1111" in out and "add it to the workspace" in out
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


def test_sds_open_prints_what_it_bound(shell, studio_stack, capsys) -> None:
    shell.run_line_magic("sds_open", f"{studio_stack.v2} --as tbl")
    out = capsys.readouterr().out
    assert out == (
        "`tbl` is the AnnData of v2 “Edit”: 26 cells × 3 variables. "
        "Saving it puts its edits in a new version on v2 “Edit”, whatever is selected later.\n"
    )


def test_sds_save_saves_the_edits_and_the_browser_shows_them(shell, studio_copy, capsys) -> None:
    import numpy as np

    from sds_jupyter import check, open_anndata
    from sds_jupyter.stack.manifest import read_manifest
    from sds_jupyter.widget import bound_browser

    shell.run_line_magic("sds_open", str(studio_copy.v2))
    adata = shell.user_ns["adata"]
    adata.obs["my_annotation"] = np.where(np.arange(adata.n_obs) % 2, "a", "b")
    capsys.readouterr()
    # {} and $ stay as typed: the line is never expanded by IPython
    shell.run_line_magic("sds_save", "'My annotation {adata} $HOME' --message \"drawn $USER\"")
    out = capsys.readouterr().out.strip()
    browser = bound_browser(shell.user_ns, "adata")
    top = bound_browser(shell.user_ns, "adata").service.stack.top.folder
    assert out == f"Saved `adata` as v3 “My annotation {{adata}} $HOME” (1 set-obs) in {top}"
    manifest = read_manifest(top / "layer.json")
    assert manifest.title == "My annotation {adata} $HOME" and manifest.message == "drawn $USER"
    assert list(manifest.changes) == [{"op": "set-obs", "table": "table", "column": "my_annotation", "kind": "string"}]
    assert browser.path == str(top) and browser.selected == browser.bound == 3
    assert check(top).ok and list(open_anndata(top).obs["my_annotation"][:2]) == ["b", "a"]
    # a second save goes on top of the first, with only the new change
    adata.obs["second"] = 1.0
    shell.run_line_magic("sds_save", "Second pass")
    assert browser.bound == 4 and read_manifest(browser.service.stack.top.manifest_path).title == "Second pass"


def test_sds_save_from_another_name(shell, studio_copy, capsys) -> None:
    shell.run_line_magic("sds_open", f"{studio_copy.v1} --as tbl")
    shell.user_ns["tbl"].uns["params"] = {"k": 3}
    shell.run_line_magic("sds_save", "Params --from tbl")
    assert "Saved `tbl` as v2 “Params” (1 set-uns)" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("", "sds_save: the following arguments are required: title"),
        ("'unclosed", "sds_save: No closing quotation"),
        ("T --from 'not a name'", "--from needs a Python name"),
        ("T --from other", "`other` was not bound by %sds_open"),
        ("Nothing", "sds_save: nothing to save"),
        ("T --bogus", "unrecognized arguments: --bogus"),
    ],
)
def test_sds_save_bad_input_is_one_line(shell, studio_copy, line, message) -> None:
    shell.run_line_magic("sds_open", str(studio_copy.v2))
    before = sorted(p.name for p in studio_copy.datasets.iterdir())
    with pytest.raises(UsageError, match=message) as info:
        shell.run_line_magic("sds_save", line)
    assert "\n" not in str(info.value)
    assert sorted(p.name for p in studio_copy.datasets.iterdir()) == before


def test_sds_save_refusal_names_the_change(shell, studio_copy) -> None:
    shell.run_line_magic("sds_open", str(studio_copy.v2))
    shell.user_ns["adata"].X[0, 0] += 1
    with pytest.raises(UsageError, match="sds_save: cannot save .*X changed"):
        shell.run_line_magic("sds_save", "Edited X")
