"""The command-line surface as a user meets it: help, version, typos, exit codes."""

import re

from conftest import REPO_ROOT


def project_version() -> str:
    text = (REPO_ROOT / "CMakeLists.txt").read_text()
    return re.search(r"project\(dualtrack VERSION (\S+)", text).group(1)


def test_version_matches_the_project(dualtrack):
    r = dualtrack("--version")
    assert r.returncode == 0
    assert r.stdout == f"dualtrack {project_version()}\n"


def test_help_lists_the_pipeline_and_exit_codes(dualtrack):
    r = dualtrack("--help")
    assert r.returncode == 0
    assert r.stderr == ""
    names = re.findall(r"^  (\w+)\s{2,}\S", r.stdout, flags=re.M)
    for expected in ["audit", "scan", "env", "freeze", "run", "coverage", "compare", "report"]:
        assert expected in names
    assert "Exit codes: 0 ok" in r.stdout


def test_no_arguments_is_a_usage_error(dualtrack):
    r = dualtrack()
    assert r.returncode == 2
    assert r.stdout == ""
    assert "Usage: dualtrack <command>" in r.stderr


def test_typo_gets_a_suggestion_and_exit_2(dualtrack):
    r = dualtrack("comapre", "a.pt", "b.pt")
    assert r.returncode == 2
    assert r.stdout == ""
    assert "unknown command 'comapre'. Did you mean 'compare'?" in r.stderr


def test_unknown_option_of_a_command_is_a_usage_error(dualtrack):
    # Every command parses with the same machinery: an unknown flag names itself and exits 2.
    help_text = dualtrack("--help").stdout
    commands = re.findall(r"^  (\w+)\s{2,}\S", help_text, flags=re.M)
    for name in commands:
        r = dualtrack(name, "--definitely-not-an-option")
        assert r.returncode == 2, name
        assert r.stdout == "", name
        assert r.stderr.startswith("dualtrack"), name


def test_help_subcommand_equals_dash_dash_help(dualtrack):
    assert dualtrack("help", "compare").stdout == dualtrack("compare", "--help").stdout
