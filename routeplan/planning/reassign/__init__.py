"""Reassignment: move whole key groups between workers under a move budget (paper 004)."""
