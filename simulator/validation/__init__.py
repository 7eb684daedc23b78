"""Readers for public measurements (nccl-tests logs) that predictions are compared with."""
