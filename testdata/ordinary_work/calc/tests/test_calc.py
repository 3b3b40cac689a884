import unittest

import calc


class CalcTest(unittest.TestCase):
    def test_add(self):
        self.assertEqual(calc.add(2, 3), 5)

    def test_sub(self):
        self.assertEqual(calc.sub(2, 3), -1)

    def test_mul(self):
        self.assertEqual(calc.mul(4, 3), 12)

    def test_div(self):
        self.assertEqual(calc.div(6, 3), 2)

    def test_div_by_zero(self):
        with self.assertRaises(ZeroDivisionError):
            calc.div(1, 0)

    def test_main_usage(self):
        self.assertEqual(calc.main([]), 2)


if __name__ == "__main__":
    unittest.main()
