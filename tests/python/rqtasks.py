"""Jobs for the RQ acceptance test."""


def add(x, y):
    return x + y
