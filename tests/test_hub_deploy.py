"""Beyond one machine, on paper: the zero-to-jupyterhub values, the course image, the devcontainer and Binder files.

No cluster and no docker build here (docker cannot build on this machine), so these
tests check what can be checked: every key of config.yaml is one the chart's values
schema documents, the values agree with the one-machine hub and the benchmark's
figures, and every pin in the launch files equals constraints.txt's.
"""

import importlib.util
import json
import re
import shlex

import pytest
import yaml

from labkit.course import hub, hub_checks, hub_config
from labkit.paths import project_root

ROOT = project_root()
VALUES = ROOT / "deploy" / "kubernetes" / "config.yaml"

# The chart's values schema names we rely on, transcribed from jupyterhub/zero-to-jupyterhub-k8s,
# jupyterhub/values.schema.yaml (commit 02dd73df01bdbb6d602fed21b0be12565ab38080): each path with the types
# (or enum values) the schema allows. OPEN marks an object the schema leaves open (additionalProperties: true).
OPEN = "open"
CHART_SCHEMA: dict[str, object] = {
    "hub.config": OPEN,
    "singleuser.image.name": (str,),
    "singleuser.image.tag": (str,),
    "singleuser.image.pullPolicy": (None, "", "IfNotPresent", "Always", "Never"),
    "singleuser.cmd": (list, str, type(None)),
    "singleuser.defaultUrl": (str, type(None)),
    "singleuser.lifecycleHooks.postStart": OPEN,
    "singleuser.storage.type": ("dynamic", "static", "none"),
    "singleuser.storage.capacity": (str, type(None)),
    "singleuser.storage.homeMountPath": (str,),
    "singleuser.memory.guarantee": (int, float, str, type(None)),
    "singleuser.memory.limit": (int, float, str, type(None)),
    "singleuser.cpu.guarantee": (int, float, type(None)),
    "singleuser.cpu.limit": (int, float, type(None)),
    "singleuser.networkPolicy.enabled": (bool,),
    **{
        f"singleuser.networkPolicy.egressAllowRules.{rule}": (bool,)
        for rule in (
            "cloudMetadataServer",
            "dnsPortsCloudMetadataServer",
            "dnsPortsKubeSystemNamespace",
            "dnsPortsPrivateIPs",
            "nonPrivateIPs",
            "privateIPs",
        )
    },
    "singleuser.startTimeout": (int, type(None)),
    "cull.enabled": (bool,),
    "cull.timeout": (int, type(None)),
    "cull.every": (int, type(None)),
    "prePuller.hook.enabled": (bool,),
    "prePuller.continuous.enabled": (bool,),
    "scheduling.userScheduler.enabled": (bool,),
    "scheduling.podPriority.enabled": (bool,),
    "scheduling.userPlaceholder.enabled": (bool,),
    "scheduling.userPlaceholder.replicas": (int,),
}


def values():
    return yaml.safe_load(VALUES.read_text(encoding="utf-8"))


def leaves(node, prefix=""):
    if isinstance(node, dict):
        for key, value in node.items():
            yield from leaves(value, f"{prefix}.{key}" if prefix else key)
    else:
        yield prefix, node


def pins():
    found = {}
    for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines():
        match = re.match(r"^([A-Za-z0-9_.-]+)==(\S+)", line)
        if match:
            found[re.sub(r"[-_.]+", "-", match[1]).lower()] = match[2]
    return found


def mib(quantity):
    number, unit = re.fullmatch(r"(\d+(?:\.\d+)?)([KMG]i?)?", str(quantity)).groups()
    scale = {"K": 1e3 / 2**20, "M": 1e6 / 2**20, "G": 1e9 / 2**20, "Ki": 1 / 1024, "Mi": 1, "Gi": 1024}
    return float(number) * (scale[unit] if unit else 1 / 2**20)


def test_every_key_of_the_values_is_one_the_charts_schema_documents_with_a_type_it_allows():
    for path, value in leaves(values()):
        known = next((p for p in CHART_SCHEMA if path == p or path.startswith(p + ".")), None)
        assert known is not None, f"{path} is not a key this course relies on from the chart's values schema"
        allowed = CHART_SCHEMA[known]
        if allowed == OPEN:
            continue
        assert path == known, f"{path}: the schema has no key below {known}"
        types = tuple(t for t in allowed if isinstance(t, type))
        choices = [a for a in allowed if not isinstance(a, type)]
        assert isinstance(value, types) or value in choices, f"{path}: {value!r} is not allowed by the schema"


def test_a_misspelled_key_would_be_caught():
    assert not any(p.startswith("singleuser.memory.limits") for p in CHART_SCHEMA)
    assert not any(p == "cull.timeOut" for p in CHART_SCHEMA)


def test_the_cluster_logs_in_as_the_one_machine_hub_does_and_holds_no_password():
    config = values()["hub"]["config"]
    assert config["JupyterHub"]["authenticator_class"] == "shared-password"
    assert config["Authenticator"]["admin_users"] == [hub.build_parser().parse_args([]).admin]
    assert config["Authenticator"]["username_pattern"] == hub_config.LEARNER_NAME_PATTERN
    assert "SharedPasswordAuthenticator" not in config  # the passwords live in secrets.yaml, never committed
    assert not [path for path, _ in leaves(values()) if "password" in path.lower()]


def test_each_pod_runs_the_offline_server_and_seeds_its_home_once():
    singleuser = values()["singleuser"]
    command = singleuser["cmd"]
    assert command[:2] == ["python", "-m"] and importlib.util.find_spec(command[2]) is not None
    seed = singleuser["lifecycleHooks"]["postStart"]["exec"]["command"]
    assert seed[:4] == ["python", "-m", "labkit.course.hub", "seed"] and "seed" in hub.VERBS
    assert seed[4] == singleuser["storage"]["homeMountPath"]
    assert singleuser["defaultUrl"] == f"/lab/tree/{hub_config.COURSE_FOLDER}"
    assert not any(singleuser["networkPolicy"]["egressAllowRules"].values())


def test_memory_and_cpu_per_learner_come_from_the_benchmarks_figures():
    singleuser = values()["singleuser"]
    guarantee, limit = mib(singleuser["memory"]["guarantee"]), mib(singleuser["memory"]["limit"])
    assert hub_checks.MIB_PER_LEARNER <= guarantee <= 2 * hub_checks.MIB_PER_LEARNER
    assert limit >= 2 * guarantee
    assert singleuser["cpu"]["guarantee"] == pytest.approx(1 / hub_checks.LEARNERS_PER_CORE)
    assert singleuser["cpu"]["limit"] >= 1


def test_idle_servers_are_culled_after_the_same_time_as_on_one_machine():
    cull = values()["cull"]
    assert cull["enabled"] and cull["timeout"] == hub.build_parser().parse_args([]).idle_timeout


def test_the_image_tag_is_the_package_version():
    import tomllib

    version = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    assert values()["singleuser"]["image"]["tag"] == version


def test_the_course_image_installs_the_hub_extra_with_the_same_pins_and_python():
    dockerfile = (ROOT / "deploy" / "kubernetes" / "Dockerfile").read_text(encoding="utf-8")
    base = re.search(r"^FROM python:3\.11\.(\d+)-", dockerfile, flags=re.MULTILINE)
    assert base and int(base[1]) >= 5, "the image's Python must be 3.11.5 or newer (a pin needs it)"
    assert f'"uv=={pins()["uv"]}"' in dockerfile
    assert '-c constraints.txt -e ".[hub]"' in dockerfile
    for folder in ("labkit", "notebooks", "fixtures", "recorded_runs"):
        assert f"COPY {folder} ./{folder}" in dockerfile
    assert 'CMD ["python", "-m", "labkit.course.hub_singleuser"]' in dockerfile


def test_the_devcontainer_parses_and_runs_the_courses_own_commands():
    import course

    config = json.loads((ROOT / ".devcontainer" / "devcontainer.json").read_text(encoding="utf-8"))
    assert "python:3.11" in config["image"]
    for key in ("postCreateCommand", "postAttachCommand"):
        words = shlex.split(config[key])
        assert words[:2] == ["python3", "course.py"] and words[2] in course.COMMANDS


def test_binders_pins_equal_constraints_and_postbuild_installs_under_them():
    listed = {}
    for line in (ROOT / "binder" / "requirements.txt").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            listed[re.sub(r"[-_.]+", "-", name).lower()] = version
    assert listed and all(pins()[name] == version for name, version in listed.items()), listed
    post_build = ROOT / "binder" / "postBuild"
    assert post_build.stat().st_mode & 0o111, "repo2docker runs postBuild only when it is executable"
    text = post_build.read_text(encoding="utf-8")
    assert "-c constraints.txt -e ." in text and "labkit workshop export student" in text


def test_the_hub_extra_pins_a_jupyterhub_with_the_shared_password_login():
    version = tuple(int(p) for p in pins()["jupyterhub"].split(".")[:2])
    assert version >= (5, 3)
    assert "configurable-http-proxy" not in pins()  # it is an npm package, pinned in deploy/proxy
