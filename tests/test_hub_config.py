"""The workshop hub's configuration and its password rule (JupyterHub's own, applied before the hub starts)."""

import os
import sys

import pytest
from traitlets.config import Config

from labkit.course.hub_config import (
    ADMIN_PASSWORD_ENV,
    PASSWORD_ENV,
    HubPasswordRefused,
    HubSettings,
    check_passwords,
    configure,
    configure_from_environment,
    write_config,
)

ROOM, ADMIN = "room-pass", "a" * 32


def settings(tmp_path, **changes):
    base = dict(state=str(tmp_path / "state"), homes=str(tmp_path / "homes"), notebooks="nb", proxy="/bin/chp")
    return HubSettings(**{**base, **changes})


def configured(tmp_path, **changes):
    c = Config()
    configure(c, settings(tmp_path, **changes), room_password=ROOM, admin_password=ADMIN)
    return c


def test_the_hub_listens_where_the_instructor_chose_and_keeps_its_state_in_the_state_folder(tmp_path):
    c = configured(tmp_path, ip="10.1.2.3", port=9000, hub_port=41000, proxy_api_port=41001)
    assert c.JupyterHub.bind_url == "http://10.1.2.3:9000/"
    assert c.JupyterHub.hub_ip == "127.0.0.1" and c.JupyterHub.hub_port == 41000
    assert c.ConfigurableHTTPProxy.api_url == "http://127.0.0.1:41001"
    assert c.ConfigurableHTTPProxy.command == ["/bin/chp"]
    assert c.JupyterHub.db_url == f"sqlite:///{tmp_path / 'state' / 'jupyterhub.sqlite'}"
    assert c.JupyterHub.cookie_secret_file == str(tmp_path / "state" / "jupyterhub_cookie_secret")
    assert configured(tmp_path).JupyterHub.bind_url == "http://127.0.0.1:8000/"


def test_login_is_the_shared_password_authenticator_with_the_instructor_as_the_only_admin(tmp_path):
    c = configured(tmp_path, admin="teacher")
    assert c.JupyterHub.authenticator_class == "shared-password"
    assert c.SharedPasswordAuthenticator.user_password == ROOM
    assert c.SharedPasswordAuthenticator.admin_password == ADMIN
    assert c.Authenticator.admin_users == {"teacher"}


def test_the_spawner_follows_the_isolation_and_every_server_starts_offline(tmp_path):
    assert configured(tmp_path, isolation="users").JupyterHub.spawner_class.endswith("IsolatedLearnerSpawner")
    c = configured(tmp_path, isolation="none", python="/venv/python")
    assert c.JupyterHub.spawner_class.endswith("SharedLearnerSpawner")
    assert c.Spawner.cmd == ["/venv/python", "-m", "labkit.course.hub_singleuser"]
    assert c.LearnerHomes.homes == str(tmp_path / "homes")


def test_the_idle_culler_runs_as_a_service_with_only_the_scopes_it_needs(tmp_path):
    c = configured(tmp_path, idle_timeout=600, python="/venv/python")
    (service,) = c.JupyterHub.services
    assert service["command"][:3] == ["/venv/python", "-m", "jupyterhub_idle_culler"]
    assert "--timeout=600" in service["command"]
    (role,) = c.JupyterHub.load_roles
    assert role["services"] == ["idle-culler"] and "admin:users" not in role["scopes"]
    assert "delete:servers" in role["scopes"]


def test_no_password_is_written_into_the_state_folder(tmp_path):
    (tmp_path / "state").mkdir()
    config = write_config(settings(tmp_path))
    written = "".join(p.read_text() for p in config.parent.iterdir())
    assert ROOM not in written and ADMIN not in written and "configure_from_environment" in written


def test_the_hub_takes_the_passwords_from_its_environment_and_removes_them(tmp_path, monkeypatch):
    pytest.importorskip("jupyterhub")
    path = settings(tmp_path).write(tmp_path / "settings.json")
    monkeypatch.setenv(PASSWORD_ENV, ROOM)
    monkeypatch.setenv(ADMIN_PASSWORD_ENV, ADMIN)
    c = Config()
    configure_from_environment(c, str(path))
    assert c.SharedPasswordAuthenticator.user_password == ROOM
    assert PASSWORD_ENV not in os.environ and ADMIN_PASSWORD_ENV not in os.environ


def test_settings_survive_a_round_trip_through_their_file(tmp_path):
    original = settings(tmp_path, port=8123, isolation="users", python=sys.executable)
    assert HubSettings.read(original.write(tmp_path / "s.json")) == original


@pytest.mark.parametrize(
    ("room", "admin", "says"),
    [
        ("short", "a" * 32, "at least 8 characters"),
        ("room-pass", "a" * 31, "at least 32 characters"),
        ("x" * 32, "x" * 32, "cannot be the same"),
        ("", "a" * 32, "no room password"),
        ("room-pass", "", "no admin password"),
    ],
)
def test_a_weak_password_is_refused_by_jupyterhubs_rule(room, admin, says):
    pytest.importorskip("jupyterhub")
    with pytest.raises(HubPasswordRefused, match=says):
        check_passwords(room, admin)


def test_passwords_at_jupyterhubs_minimum_lengths_are_accepted():
    pytest.importorskip("jupyterhub")
    check_passwords("8-chars!", "b" * 32)
