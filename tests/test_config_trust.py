"""A configuration file in the current folder that another user could have written is not read: it
could point the judge (and the API key sent with every request) at that user's server. It is ignored
with a warning naming the file and what to do, as the caches are (`files.open_trusted_folder`)."""

from __future__ import annotations

import os

import pytest
from conftest import RESPONSES, TESTCASES, run_qareport

from qareport.settings import find_config_file, resolve_settings

KEY = "sk-victim-0123456789abcdef"
OTHER_UID = 54321  # a user id that is not this process's (the suite may run as root)

needs_owners = pytest.mark.skipif(not hasattr(os, "geteuid"), reason="files have no POSIX owners here")


def shared_folder(tmp_path):
    """A folder every user may write to, without the sticky bit (as a careless shared folder)."""
    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(0o777)
    return folder


def resolve(folder):
    return resolve_settings(environ={"HOME": str(folder), "OPENAI_API_KEY": KEY}, cwd=folder)


@needs_owners
def test_a_qareport_yaml_in_a_folder_others_may_write_is_ignored_with_a_warning(tmp_path):
    folder = shared_folder(tmp_path)
    (folder / "qareport.yaml").write_text("judge:\n  base_url: http://127.0.0.1:9/v1\n")
    settings = resolve(folder)
    assert settings.config_file is None
    assert settings.judge is not None and settings.judge.base_url != "http://127.0.0.1:9/v1"
    (warning,) = settings.warnings
    assert warning.startswith(f"{folder / 'qareport.yaml'}: configuration not read, because another user could "
                              "have written it")
    assert "can be written by other users (mode 0777" in warning
    assert "--config" in warning


@needs_owners
@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() != 0, reason="giving a file away needs root")
def test_a_configuration_owned_by_another_user_is_ignored(tmp_path):
    (tmp_path / "qareport.yaml").write_text("judge:\n  base_url: http://127.0.0.1:9/v1\n")
    os.chown(tmp_path / "qareport.yaml", OTHER_UID, OTHER_UID)
    settings = resolve(tmp_path)
    assert settings.config_file is None and settings.judge.base_url != "http://127.0.0.1:9/v1"
    (warning,) = settings.warnings
    assert f"belongs to another user (uid {OTHER_UID})" in warning
    (tmp_path / "qareport.yaml").unlink()
    (tmp_path / "pyproject.toml").write_text('[tool.qareport.judge]\nbase_url = "http://127.0.0.1:9/v1"\n')
    os.chown(tmp_path / "pyproject.toml", OTHER_UID, OTHER_UID)
    seen: list[str] = []
    assert find_config_file(None, tmp_path, on_warning=seen.append) is None
    assert seen and seen[0].startswith(f"{tmp_path / 'pyproject.toml'}: configuration not read")


@needs_owners
def test_a_file_of_ones_own_in_a_private_folder_is_still_read_and_config_is_taken_as_given(tmp_path):
    (tmp_path / "qareport.yaml").write_text("strict: true\n")
    settings = resolve(tmp_path)
    assert settings.config_file == str(tmp_path / "qareport.yaml") and settings.warnings == ()
    folder = shared_folder(tmp_path)
    (folder / "team.yaml").write_text("strict: true\n")
    named = resolve_settings(environ={"HOME": str(folder)}, cwd=folder, config_path=str(folder / "team.yaml"))
    assert named.run.strict is True and named.warnings == ()


@needs_owners
def test_a_run_in_a_shared_folder_never_sends_the_key_to_the_address_its_configuration_names(tmp_path, server):
    folder = shared_folder(tmp_path)
    (folder / "qareport.yaml").write_text(f"judge:\n  base_url: {server.url}\n  max_retries: 0\n")
    done = run_qareport("run", TESTCASES, "--responses", RESPONSES, "--output", tmp_path / "week.xlsx", "-q",
                        cwd=folder, env={"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
                                         "HOME": str(tmp_path)})
    assert server.requests == []
    assert f"qareport: {folder / 'qareport.yaml'}: configuration not read" in done.stderr
    assert (tmp_path / "week.xlsx").exists()
