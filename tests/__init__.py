"""Tests: `filecheck/` (lit + FileCheck), `unit/` (pytest), `e2e/` (whole-tool runs)."""
