"""A small calculator: the fixture project of spear's ordinary-work benchmark."""

import sys


def add(a, b):
    return a + b


def sub(a, b):
    return a - b


def mul(a, b):
    return a * b


def div(a, b):
    if b == 0:
        raise ZeroDivisionError("division by zero")
    return a / b


OPS = {"add": add, "sub": sub, "mul": mul, "div": div}


def main(argv):
    if len(argv) != 3 or argv[0] not in OPS:
        print("usage: calc.py add|sub|mul|div A B", file=sys.stderr)
        return 2
    print(OPS[argv[0]](float(argv[1]), float(argv[2])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
