.PHONY: help install test test-fast lint typecheck format ci docs golden validate
help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'
install:  ## install jobdef with the test dependencies (editable)
	python3 -m pip install -e '.[test]'
test:  ## run the test suite
	python3 -m pytest
test-fast:  ## the fast tier while editing: no services (PostgreSQL, Redis, RabbitMQ, Chromium), no slow tests, on every core
	python3 -m pytest -m "not slow and not services" -n auto
lint:  ## the static checks CI runs: ruff lint and format check, then mypy
	python3 -m ruff check . && python3 -m ruff format --check . && python3 -m mypy
typecheck:  ## mypy over src/jobdef (settings in pyproject.toml)
	python3 -m mypy
format:  ## apply ruff formatting and safe fixes
	python3 -m ruff format . && python3 -m ruff check --fix .
ci:  ## run exactly what CI runs
	bash .ci/run
docs:  ## regenerate docs/jobs/ from the sheets in jobdefs/
	python3 -m jobdef docs
golden:  ## regenerate the golden docs/TSV/explain files and docs/jobs/ after an intended change
	JOBDEF_UPDATE_GOLDEN=1 python3 -m pytest -q tests/render/test_docs_golden.py && python3 -m jobdef docs
validate:  ## check the example sheets as CI does
	python3 -m jobdef validate jobdefs --strict
