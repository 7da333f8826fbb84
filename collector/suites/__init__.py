"""Suites in CI: suite files, `tooltrail check` (offline or against a server), importers from
other tools' formats, golden trajectories, `apply`."""
