"""``routeplan.files``: the files routeplan reads (workers files)."""

from __future__ import annotations

import json
import re

import pytest

from routeplan.errors import InputError
from routeplan.files import read_workers_file


def test_a_workers_file_is_checked_whole(tmp_path):
    """A stream whose workers cannot be (a name twice, none active) makes the file unusable,
    whichever stream is asked for; the error names the file and the stream."""
    path = tmp_path / "workers.json"
    good = [{"stream": "a", "worker": "w0", "capacity": 1}]
    for bad in (
        [{"stream": "b", "worker": "w0", "capacity": 1}] * 2,
        [{"stream": "b", "worker": "w0", "capacity": 1, "state": "draining"}],
    ):
        path.write_text(json.dumps({"workers": good + bad}))
        with pytest.raises(InputError, match=rf"^{re.escape(str(path))}: stream 'b': "):
            read_workers_file(path)
    path.write_text(json.dumps({"workers": [{**good[0], "capacity": 0}]}))
    with pytest.raises(InputError, match=re.escape(str(path))):
        read_workers_file(path)
