#!/usr/bin/env python3
"""Trunk post-build hook: give the built page a Content-Security-Policy.

Trunk writes the wasm loader as an inline module script whose text changes with every build's file hashes, so
the policy names that script by its SHA-256 (no 'unsafe-inline'). Everything else the page loads comes from its
own origin; 'wasm-unsafe-eval' lets it compile its WebAssembly. Run by Trunk with TRUNK_STAGING_DIR set.
"""
import base64
import hashlib
import os
import re
import sys

path = os.path.join(os.environ.get("TRUNK_STAGING_DIR", "dist"), "index.html")
html = open(path, encoding="utf-8").read()
scripts = re.findall(r"<script type=\"module\">(.*?)</script>", html, re.S)
if len(scripts) != 1:
    sys.exit(f"csp.py: expected Trunk's one inline loader script in {path}, found {len(scripts)}")
digest = base64.b64encode(hashlib.sha256(scripts[0].encode("utf-8")).digest()).decode()
policy = "; ".join([
    "default-src 'self'",
    f"script-src 'self' 'sha256-{digest}' 'wasm-unsafe-eval'",
    # Styles may be set inline (the page sets a few as attributes); scripts may not.
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "worker-src 'self' blob:",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
])
meta = f'<meta http-equiv="Content-Security-Policy" content="{policy}">'
if "Content-Security-Policy" in html:
    html = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', meta, html)
else:
    html = html.replace('<meta charset="utf-8">', '<meta charset="utf-8">\n  ' + meta, 1)
open(path, "w", encoding="utf-8").write(html)
