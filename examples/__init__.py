"""Runnable example applications; each one is run by a test."""
