import json

import pytest

from labkit.cli import main
from tests.signers import fingerprint, list_key, make_key, needs_ssh_keygen, reseal_edited_reply


def test_verify_passes_on_the_committed_runs(course, capsys):
    assert main(["verify"]) == 0
    out = capsys.readouterr().out
    assert "18 of 18 runs verified, each signed by a listed key; 0 secrets found" in out


def test_verify_catches_a_tampered_reply(course, capsys):
    path = course / "recorded_runs" / "02-rag-authored" / "run.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["bindings"][0]["request"]["temperature"] = 1
    path.write_text(json.dumps(data), encoding="utf-8")
    assert main(["verify"]) == 1
    assert "02-rag-authored" in capsys.readouterr().out.split("REFUSED")[0].splitlines()[-1]


def test_verify_catches_a_changed_fixture(course, capsys):
    inputs = course / "fixtures" / "routing" / "model-inputs.json"
    inputs.write_text(inputs.read_text(encoding="utf-8").replace("t1", "t01"), encoding="utf-8")
    assert main(["verify"]) == 1
    assert "model-inputs.json" in capsys.readouterr().out


def test_verify_catches_a_key_in_a_run_folder(course, capsys):
    (course / "recorded_runs" / "02-rag-authored" / "notes.txt").write_text(
        "OPENAI_API_KEY=s" + "k-abcdefghijklmnopqrstuvwx\n"
    )
    assert main(["verify"]) == 1
    assert "SECRET" in capsys.readouterr().out


def _line(out, run_id):
    return next(row for row in out.splitlines() if row.startswith(run_id))


def test_verify_catches_an_edited_reply_in_a_captured_run(course, capsys):
    path = course / "recorded_runs" / "02-rag-smollm2" / "run.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["bindings"][1]["response"]["choices"][0]["message"]["content"] = '{"status": "not_in_docs"}'
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    assert main(["verify"]) == 1
    line = _line(capsys.readouterr().out, "02-rag-smollm2")
    assert "REFUSED" in line and "bindings.1" in line and "field 'response' was edited" in line


@needs_ssh_keygen
def test_verify_catches_a_fixture_edited_after_its_hash_was_removed_from_the_run(course, capsys, monkeypatch):
    from labkit.recording import load_run, seal_run, write_run_file

    run = load_run("06-routing-smollm2")
    fields = run.model_dump(mode="json")
    fields["fixtures"] = {k: v for k, v in run.fixtures.items() if not k.endswith("model-inputs.json")}
    # a thorough forger, or a careless instructor: the run file, the manifest and a listed key's signature all
    # agree with the shortened fixture list
    key = make_key(course / "keys")
    list_key(course / "recorded_runs", key, "instructor")
    monkeypatch.setenv("LABKIT_SIGNING_KEY", str(key))
    write_run_file(
        seal_run(**{k: v for k, v in fields.items() if k not in ("schema_version", "content_sha256")}), replace=True
    )
    inputs = course / "fixtures" / "routing" / "model-inputs.json"
    inputs.write_text(inputs.read_text(encoding="utf-8").replace("t1", "t01"), encoding="utf-8")
    assert main(["verify"]) == 1
    line = _line(capsys.readouterr().out, "06-routing-smollm2")
    assert "field 'fixtures' lacks ['fixtures/routing/model-inputs.json']" in line and "lesson 06" in line


def test_verify_catches_a_run_added_outside_the_manifest(course, capsys):
    import shutil

    shutil.copytree(course / "recorded_runs" / "02-rag-authored", course / "recorded_runs" / "02-rag-copy")
    assert main(["verify"]) == 1
    out = capsys.readouterr().out
    assert "02-rag-copy" in out and "not in manifest.json" in out


# --- signatures: a re-sealed edit, and every way of hiding it -------------------------------------


def _refused(out, run_id):
    line = _line(out, run_id)
    assert "REFUSED" in line, line
    return line


def test_verify_reports_every_committed_run_signed_by_the_course_and_its_fingerprint(course, capsys):
    from labkit.signing import read_allowed_signers

    assert main(["verify"]) == 0
    out = capsys.readouterr().out
    [course_key] = read_allowed_signers()
    assert out.splitlines()[0].split() == ["run", "origin", "lesson", "bindings", "signed", "by", "status"]
    for run_id in ("02-rag-smollm2", "02-rag-authored"):
        assert _line(out, run_id).split()[4:6] == ["labkit-course", "ok"]
    assert f"  labkit-course  {course_key.fingerprint}  signed 18 of the runs" in out


def test_a_resealed_edit_with_the_old_signature_left_in_place_fails_verify(course, capsys):
    reseal_edited_reply("02-rag-smollm2", keep_signature=True)
    assert main(["verify"]) == 1
    line = _refused(capsys.readouterr().out, "02-rag-smollm2")
    assert "run '02-rag-smollm2': its signature run.json.sig is invalid: it does not verify over run.json" in line
    assert "The run changed after it was signed" in line


@pytest.mark.parametrize(("run_id", "origin"), [("02-rag-smollm2", "captured"), ("02-rag-authored", "authored")])
def test_a_resealed_edit_whose_signature_was_deleted_fails_verify_saying_how_to_sign(course, capsys, run_id, origin):
    """The forger's whole route: edit a reply, recompute every hash and the manifest entry, drop the signature.

    An authored run claims no model call, yet unsigned it would pass this route: it is refused like a captured one.
    """
    reseal_edited_reply(run_id, keep_signature=False)
    (course / "recorded_runs" / run_id / "run.json.sig").unlink(missing_ok=True)  # as a forger would
    assert not (course / "recorded_runs" / run_id / "run.json.sig").exists()
    assert main(["verify"]) == 1
    line = _refused(capsys.readouterr().out, run_id)
    assert f"{origin} run '{run_id}' is unsigned, so nothing shows who sealed it" in line
    assert f"Sign it with `labkit sign {run_id}` (LABKIT_SIGNING_KEY names your private key" in line


def test_an_authored_run_without_a_signature_is_refused(course, capsys):
    """Unsigned, an authored run's reply could be edited and its hashes recomputed with nothing to show it."""
    (course / "recorded_runs" / "02-rag-authored" / "run.json.sig").unlink()
    assert main(["verify"]) == 1
    line = _refused(capsys.readouterr().out, "02-rag-authored")
    assert "authored run '02-rag-authored' is unsigned, so nothing shows who sealed it" in line
    assert "labkit sign 02-rag-authored" in line


def test_a_signature_copied_from_another_run_fails_verify(course, capsys):
    runs = course / "recorded_runs"
    (runs / "02-rag-smollm2" / "run.json.sig").write_bytes((runs / "02-rag-authored" / "run.json.sig").read_bytes())
    assert main(["verify"]) == 1
    assert "its signature run.json.sig is invalid" in _refused(capsys.readouterr().out, "02-rag-smollm2")


@needs_ssh_keygen
def test_a_resealed_edit_signed_by_a_key_not_in_allowed_signers_fails_verify(course, capsys, monkeypatch):
    forger = make_key(course / "keys", "forger")
    monkeypatch.setenv("LABKIT_SIGNING_KEY", str(forger))
    reseal_edited_reply("02-rag-smollm2", keep_signature=False)  # the run writer signs with the forger's key
    assert main(["verify"]) == 1
    line = _refused(capsys.readouterr().out, "02-rag-smollm2")
    assert (
        f"run '02-rag-smollm2' is signed by the key {fingerprint(forger)}, which recorded_runs/allowed_signers "
        "does not list"
    ) in line


@needs_ssh_keygen
def test_a_key_the_forger_added_to_allowed_signers_is_shown_with_its_principal_and_fingerprint(
    course, capsys, monkeypatch
):
    # Nothing inside the repository can refuse this: allowed_signers is the trust root, and verify shows it whole.
    forger = make_key(course / "keys", "forger")
    list_key(course / "recorded_runs", forger, "labkit-course")
    monkeypatch.setenv("LABKIT_SIGNING_KEY", str(forger))
    reseal_edited_reply("02-rag-smollm2", keep_signature=False)
    assert main(["verify"]) == 0
    out = capsys.readouterr().out
    signers = out.split("the trust root (review every change to it):\n")[1].splitlines()
    assert signers[1] == f"  labkit-course  {fingerprint(forger)}  signed 1 of the runs"
    assert signers[0].endswith("signed 17 of the runs")
