"""Prompt content from files: image/audio blocks with their MIME type, embedded text resources;
what the agent does not accept is refused locally (nothing is sent)."""

from __future__ import annotations

from pathlib import Path

import pytest

import acp_host
from conftest import mock


def test_files_become_content_blocks_and_capabilities_gate_them(tmp_path: Path) -> None:
    png = tmp_path / "pic.png"
    png.write_bytes(b"\x89PNG")
    image = acp_host.content_from_file(png)
    assert (image["type"], image["mimeType"], image["data"]) == ("image", "image/png", "iVBORw==")
    notes = tmp_path / "notes.md"
    notes.write_text("# notes\n")
    resource = acp_host.content_from_file(str(notes))
    assert resource["type"] == "resource" and resource["resource"]["text"] == "# notes\n"
    wav = tmp_path / "voice.wav"
    wav.write_bytes(b"RIFF")
    audio = acp_host.content_from_file(wav)
    assert audio["mimeType"] == "audio/wav"
    with pytest.raises(acp_host.InvalidArgumentError):
        acp_host.content_from_file("relative.png")
    with acp_host.Host() as host:
        session = host.spawn(mock("all-updates")).new_session(str(tmp_path))
        # The mock accepts images and embedded context, not audio.
        assert session.prompt(["look", image, resource]).stop_reason == "end_turn"
        with pytest.raises(acp_host.UnsupportedError):
            session.prompt([audio])
