"""All writes. Keyword-only functions named <entity>_<action> (HackSoft style)."""
