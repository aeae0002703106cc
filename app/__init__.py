"""Raiz game service: tables, rounds, rules, timers, views and the HTTP API."""
