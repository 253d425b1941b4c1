"""npm_scripts: what a package.json script runs, and which runner each command starts."""

from __future__ import annotations

import pytest

from sandlot.verify.npm_scripts import Step, expand, runner_of, split_list


@pytest.mark.parametrize(
    ("command", "runner"),
    [
        ("jest", "jest"),
        ("c8 --100 node --test", "node-test"),
        ("c8 --reporter text node --test test/", "node-test"),
        ("nyc --reporter=lcov mocha 'test/**/*.spec.js'", "mocha"),
        ("nyc _mocha", "mocha"),
        ("cross-env NODE_ENV=test TZ=UTC jest --ci", "jest"),
        ("TZ=UTC npx vitest run", "vitest"),
        ("tsx --test src/*.test.ts", "node-test"),
        ("./node_modules/.bin/mocha", "mocha"),
        ("tsx scripts/build.ts", ""),
        ("node scripts/test.js", ""),
        ("tsc --noEmit", ""),
        ("eslint . && jest", ""),  # a list is not one command (expand splits it)
        ("mocha 'unbalanced", ""),
    ],
)
def test_runner_behind_wrappers(command: str, runner: str) -> None:
    assert runner_of(command) == runner


def test_references_pre_and_post_scripts_are_followed_in_order() -> None:
    scripts = {
        "pretest": "npm run build",
        "build": "tsc -p .",
        "test": "npm run test:unit && pnpm test:e2e; yarn lint",
        "test:unit": "cross-env CI=1 jest",
        "test:e2e": "tsx --test e2e/*.ts",
        "lint": "eslint .",
        "posttest": "node report.js",
    }
    assert expand(scripts, "test") == [
        Step("build", "tsc -p .", "", ""),
        Step("test:unit", "cross-env CI=1 jest", "&&", "jest"),
        Step("test:e2e", "tsx --test e2e/*.ts", "&&", "node-test"),
        Step("lint", "eslint .", ";", ""),
        Step("posttest", "node report.js", "&&", ""),
    ]


def test_npm_test_and_run_script_spellings() -> None:
    scripts = {"test": "npm run-script a; npm t", "a": "mocha"}
    assert expand({**scripts, "test": "npm run-script a"}, "test") == [
        Step("a", "mocha", "", "mocha")
    ]
    assert expand(scripts, "test") is None  # `npm t` runs "test" itself: a loop


@pytest.mark.parametrize(
    "script",
    [
        "jest || true",
        "jest | tee out.txt",
        "jest > out.txt",
        "(cd pkg && jest)",
        "jest & wait",
        "jest $(echo --ci)",
        "jest `echo --ci`",
    ],
)
def test_lists_beyond_and_and_semicolon_are_not_split(script: str) -> None:
    assert expand({"test": script}, "test") is None


def test_quotes_keep_separators_and_text_as_written() -> None:
    assert split_list("""mocha --grep 'a && b' "x;y" && vitest run 'src/*'""") == [
        ("""mocha --grep 'a && b' "x;y" """, ""),
        (" vitest run 'src/*'", "&&"),
    ]
    steps = expand({"test": "mocha --grep 'a && b' && vitest run 'src/*'"}, "test")
    assert steps is not None
    assert [s.command for s in steps] == ["mocha --grep 'a && b'", "vitest run 'src/*'"]


def test_a_manager_call_with_arguments_is_a_command_not_a_reference() -> None:
    # `npm run a -- --ci` passes arguments on: it is run as written, whole.
    steps = expand({"test": "npm run a -- --ci", "a": "jest"}, "test")
    assert steps == [Step("test", "npm run a -- --ci", "", "")]


def test_a_wrapper_around_a_script_reference_wraps_each_of_its_commands() -> None:
    # json-schema-traverse 1.0.0's own scripts.
    scripts = {
        "eslint": "eslint index.js spec",
        "test-spec": "mocha spec -R spec",
        "test": "npm run eslint && nyc npm run test-spec",
    }
    assert expand(scripts, "test") == [
        Step("eslint", "eslint index.js spec", "", ""),
        Step("test-spec", "nyc mocha spec -R spec", "&&", "mocha"),
    ]


def test_a_wrapper_with_options_around_a_script_reference() -> None:
    # `--silent` is nyc's flag, and `npm` is no value of it: the reference is still followed.
    scripts = {"test-spec": "mocha spec", "test": "nyc --silent npm run test-spec"}
    assert expand(scripts, "test") == [
        Step("test-spec", "nyc --silent mocha spec", "", "mocha"),
    ]
