"""End-to-end tests in a real browser (pytest -m browser); see conftest.py."""
