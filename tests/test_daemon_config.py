"""Config precedence (flags > file > environment > defaults), refusals naming key/value/why, endpoints,
and the one JSON-RPC error mapping. Pure functions, no daemon."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mmd.core.errors import ErrorCode, MMError
from mmd.daemon.config import ConfigError, build_config, parse_args
from mmd.daemon.rpc import error_object
from mmd.wire.endpoints import endpoint_key, endpoints_for, ensure_private_dir, runtime_dir
from mmd.wire.protocol import DaemonCode, DaemonError, FrameError, JsonRpc, parse_request


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"HOME": str(tmp_path / "home"), "DSH_HOME": str(tmp_path / "dsh"),
            "XDG_CONFIG_HOME": str(tmp_path / "xdg"), "XDG_RUNTIME_DIR": str(tmp_path / "run"), **extra}


def test_no_arguments_give_the_embedded_defaults_and_the_spec_root(tmp_path: Path) -> None:
    cfg = build_config(parse_args([]), _env(tmp_path))
    assert cfg.root == tmp_path / "dsh" / "memory"
    assert cfg.sessions_dir == tmp_path / "dsh" / "sessions"
    assert cfg.memory.index_lines == 200 and cfg.memory.nudge_enabled is True
    assert cfg.memory.nudge_interval_ms == 1_800_000 and cfg.lang == "auto"
    assert cfg.rpc_endpoint == endpoints_for(cfg.root, _env(tmp_path)).rpc
    assert cfg.rpc_endpoint.startswith(f"ipc://{tmp_path}/run/mmd/") and cfg.rpc_endpoint.endswith(".rpc")
    assert cfg.config_file is None


def test_flags_override_the_file_which_overrides_the_environment_and_defaults(tmp_path: Path) -> None:
    (tmp_path / "xdg" / "mmd").mkdir(parents=True)
    (tmp_path / "xdg" / "mmd" / "config.toml").write_text(
        'root = "$DSH_HOME/from-file"\nindexLines = 50\nlang = "zh"\n'
        '[search]\nlimit = 3\n[nudge]\nenabled = false\n[daemon]\nheartbeatMs = 900\nsessions = "~/logs"\n')
    env = _env(tmp_path, DSH_MEMORY_ROOT=str(tmp_path / "from-env"))
    from_file = build_config(parse_args([]), env)
    assert from_file.root == tmp_path / "dsh" / "from-file"
    assert from_file.memory.index_lines == 50 and from_file.memory.search_limit == 3
    assert from_file.memory.nudge_enabled is False and from_file.heartbeat_ms == 900 and from_file.lang == "zh"
    assert from_file.sessions_dir == tmp_path / "home" / "logs"
    flags = parse_args(["--root", str(tmp_path / "flag"), "--index-lines", "70", "--nudge", "--heartbeat-ms", "5"])
    both = build_config(flags, env)
    assert both.root == tmp_path / "flag" and both.memory.index_lines == 70
    assert both.memory.nudge_enabled is True and both.heartbeat_ms == 5 and both.memory.search_limit == 3


@pytest.mark.parametrize(("toml", "key", "why"), [
    ("indexLines = 0", "indexLines", "positive integer"),
    ("indexBytes = 1.5", "indexBytes", "positive integer"),
    ('memoryId = "Not A Slug"', "memoryId", "slug"),
    ('[search]\nmode = "grep"', "search.mode", "auto, scan, fts5"),
    ('[nudge]\nenabled = "yes"', "nudge.enabled", "true or false"),
    ('lang = "fr"', "lang", "auto, en, zh"),
    ("colour = 1", "colour", "unknown key"),
    ('[daemon]\nrpc = "tcp://0.0.0.0:1"', "daemon.rpc", "CURVE"),
    ('[daemon]\npub = "http://x"', "daemon.pub", "ipc:// or tcp://"),
    ('[daemon]\ncurveSecretKeyFile = "/nonexistent/key"', "daemon.curveSecretKeyFile", "CURVE certificate"),
    ('[git]\nenabled = "on"', "git.enabled", "true or false"),
    ('[git]\nremote = "up stream"', "git.remote", "not a valid git name"),
    ('[git]\nremote = "-x"', "git.remote", "not a valid git name"),
    ('[git]\nbranch = "topic.lock"', "git.branch", "not a valid git name"),
    ('[git]\nsyncIntervalMs = 0', "git.syncIntervalMs", "positive integer"),
    ('[git]\nautopush = true', "git.autopush", "unknown key"),
])
def test_a_bad_config_file_is_refused_naming_key_value_and_why(tmp_path: Path, toml: str, key: str,
                                                                why: str) -> None:
    path = tmp_path / "c.toml"
    path.write_text(toml + "\n")
    with pytest.raises(ConfigError) as refused:
        build_config({"config": str(path)}, _env(tmp_path))
    assert refused.value.key == key and why in refused.value.why


def test_the_git_table_is_off_by_default_and_read_from_the_file_and_flags(tmp_path: Path) -> None:
    off = build_config(parse_args([]), _env(tmp_path))
    assert (off.git.enabled, off.git.remote, off.git.branch, off.git.sync_interval_ms) == (False, "origin", None,
                                                                                          300_000)
    path = tmp_path / "c.toml"
    path.write_text('[git]\nenabled = true\nremote = "team"\nbranch = "memory/main"\nsyncIntervalMs = 60000\n')
    on = build_config({"config": str(path)}, _env(tmp_path))
    assert (on.git.enabled, on.git.remote, on.git.branch, on.git.sync_interval_ms) == (True, "team", "memory/main",
                                                                                      60_000)
    flags = build_config(parse_args(["--config", str(path), "--no-git", "--git-remote", "origin"]), _env(tmp_path))
    assert flags.git.enabled is False and flags.git.remote == "origin" and flags.git.branch == "memory/main"


def test_an_explicit_missing_or_broken_config_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="file not found"):
        build_config({"config": str(tmp_path / "missing.toml")}, _env(tmp_path))
    (tmp_path / "broken.toml").write_text("indexLines = = 3\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        build_config({"config": str(tmp_path / "broken.toml")}, _env(tmp_path))
    with pytest.raises(ConfigError, match="positive integer"):
        build_config(parse_args(["--search-limit", "ten"]), _env(tmp_path))


def test_tcp_is_accepted_with_a_curve_certificate(tmp_path: Path) -> None:
    import zmq.auth

    _, secret = zmq.auth.create_certificates(str(tmp_path), "server")
    flags = ["--rpc", "tcp://127.0.0.1:7001", "--curve-secret-key-file", secret]
    with pytest.raises(ConfigError, match="curveClientKeysDir"):  # no allow-list of clients: refused
        build_config(parse_args(flags), _env(tmp_path))
    (tmp_path / "clients").mkdir()
    cfg = build_config(parse_args([*flags, "--curve-client-keys-dir", str(tmp_path / "clients")]), _env(tmp_path))
    assert cfg.rpc_endpoint == "tcp://127.0.0.1:7001" and cfg.curve_secret_key and len(cfg.curve_secret_key) == 40
    assert cfg.curve_clients_dir == tmp_path / "clients"


def test_endpoints_derive_from_the_real_path_of_the_root(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert endpoint_key(tmp_path / "link") == endpoint_key(tmp_path / "real")
    assert len(endpoint_key(tmp_path / "real")) == 16
    assert runtime_dir({}, run_user=tmp_path / "no-run-user") == Path(f"/tmp/mmd-{os.getuid()}")
    assert runtime_dir({"XDG_RUNTIME_DIR": "relative"}, run_user=tmp_path / "no-run-user") == Path(
        f"/tmp/mmd-{os.getuid()}")
    folder = tmp_path / "loose"
    folder.mkdir(mode=0o755)
    ensure_private_dir(folder)
    assert os.stat(folder).st_mode & 0o777 == 0o700
    ensure_private_dir(tmp_path / "new" / "deeper")
    assert os.stat(tmp_path / "new" / "deeper").st_mode & 0o777 == 0o700


def test_without_xdg_runtime_dir_the_user_runtime_folder_systemd_made_is_used(tmp_path: Path) -> None:
    # a daemon under systemd --user has XDG_RUNTIME_DIR=/run/user/<uid>; an MCP client's bare environment has
    # none: both must name the same sockets (the client used /tmp/mmd-<uid> and never found the daemon)
    run_user = tmp_path / "run-user"
    mine = run_user / str(os.getuid())
    mine.mkdir(parents=True, mode=0o700)
    assert runtime_dir({}, run_user=run_user) == mine
    assert runtime_dir({"XDG_RUNTIME_DIR": str(mine)}, run_user=run_user) == mine
    assert runtime_dir({"XDG_RUNTIME_DIR": "/elsewhere"}, run_user=run_user) == Path("/elsewhere")
    mine.rmdir()
    mine.write_text("not a folder")
    assert runtime_dir({}, run_user=run_user) == Path(f"/tmp/mmd-{os.getuid()}")


def test_one_function_maps_every_error_to_json_rpc() -> None:
    assert error_object(MMError(ErrorCode.E_INVALID, "bad topic", details="x")) == {
        "code": -32602, "message": "bad topic", "data": {"code": "E_INVALID", "details": "x"}}
    assert error_object(MMError(ErrorCode.E_PARSE, "broken"))["code"] == JsonRpc.SERVER_ERROR
    conflict = DaemonError(DaemonCode.E_CONFLICT, "stale", revision=7)
    assert error_object(conflict) == {"code": -32000, "message": "stale", "data": {"code": "E_CONFLICT", "revision": 7}}
    assert error_object(KeyError("boom")) == {"code": -32603, "message": "internal error: KeyError",
                                              "data": {"code": "E_INTERNAL"}}
    assert parse_request(b'{"jsonrpc":"2.0","id":3,"method":"m"}') == (3, "m", {}, True)
    assert parse_request(b'{"jsonrpc":"2.0","method":"m","params":{"a":1}}') == (None, "m", {"a": 1}, False)
    with pytest.raises(FrameError) as bad_id:
        parse_request(b'{"jsonrpc":"2.0","id":true,"method":"m"}')
    assert bad_id.value.rpc_code == JsonRpc.INVALID_REQUEST
    assert error_object(bad_id.value) == {"code": -32600, "message": "id must be a string, an integer or null",
                                          "data": {"code": "E_INVALID"}}


def test_log_lines_are_one_event_each_and_carry_syslog_priorities_under_journald(
        capsys: pytest.CaptureFixture[str]) -> None:
    import logging

    from mmd.daemon.logs import setup_logging

    try:
        setup_logging("info", journal=True)
        log = logging.getLogger("mmd.test")
        log.warning("first line\nsecond line")
        log.debug("hidden at info")
        setup_logging("debug", journal=False)
        log.info("plain")
        lines = capsys.readouterr().err.splitlines()
    finally:
        for name in ("mmd", "apscheduler"):
            logging.getLogger(name).handlers.clear()
            logging.getLogger(name).propagate = True
    assert lines[0] == "<4>mmd.test: first line\\nsecond line"
    assert len(lines) == 2 and lines[1].endswith(" info mmd.test: plain")
