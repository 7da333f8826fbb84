"""Matcher tests: keep hypothesis's files out of the working tree."""

from __future__ import annotations

import os
import tempfile

from hypothesis import configuration

configuration.set_hypothesis_home_dir(os.path.join(tempfile.gettempdir(), "tooltrail-hypothesis"))
