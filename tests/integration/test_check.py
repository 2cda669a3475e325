"""`daqflow check` accepts every shipped example and points at an unknown key by line."""

import os
import re
import unittest

from daqflow_testlib import DaqflowTestCase, example_files


class Check(DaqflowTestCase):
    def test_every_example_is_valid(self):
        files = example_files()
        self.assertTrue(files, "examples/ has no configuration")
        for path in files:
            with self.subTest(example=os.path.basename(path)):
                code, out = self.daqflow(["check", path], timeout=30)
                self.assertEqual(code, 0, out)

    def test_an_unknown_key_is_rejected_with_its_line(self):
        for path in example_files():
            with self.subTest(example=os.path.basename(path)):
                with open(path) as f:
                    lines = f.read().splitlines(keepends=True)
                # After the first block-style `control_port:` of a context, at the same
                # indentation: a key of the context mapping that no schema knows.
                index = next((i for i, line in enumerate(lines)
                              if re.match(r"^\s*(- )?control_port\s*:\s*\d+\s*$", line)), None)
                self.assertIsNotNone(index, f"{path} has no block-style control_port line")
                m = re.match(r"^(\s*)(- )?", lines[index])
                indent = m.group(1) + ("  " if m.group(2) else "")
                lines.insert(index + 1, f"{indent}control_knob_typo: 3\n")
                bad = self.write_config("bad-" + os.path.basename(path), "".join(lines))
                line_number = index + 2  # 1-based, the inserted line

                code, out = self.daqflow(["check", bad], timeout=30)

                self.assertNotEqual(code, 0, out)
                self.assertIn("control_knob_typo", out)
                self.assertRegex(out, rf"{re.escape(os.path.basename(bad))}:{line_number}\b")


if __name__ == "__main__":
    unittest.main()
