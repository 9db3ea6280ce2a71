"""How a citation is written: every pattern of it, in one place, importing nothing.

The answer layer reads citations with these (citations.py finds and resolves them, claims.py reads an answer's
[n], grounding.py blanks them out before it reads figures), and so does the service (a conversation's earlier
answers sent back over HTTP). Kept apart from citations.py so that every module may use them without a cycle.
"""

from __future__ import annotations

import re

#: A bracketed group that may hold citations, "[P3:12, P3:14]" or "[2-4]".
BRACKET = re.compile(r"\[([^\[\]\n]{1,400})\]")
#: A source number as an answer shows it, "[3]" (the claims read the answer's final text with these).
NUMBERED = re.compile(r"\[(\d{1,3})\]")
#: A short bracketed group, as the grounding check blanks citations out before it reads an answer's figures.
SHORT_BRACKET = re.compile(r"\[[^\[\]\n]{1,60}\]")
#: A passage cited alone: `<paper>:<chunk_index>`, the paper a doc_id or an agent's label (P3), maybe bracketed.
PASSAGE_REF = re.compile(r"^\s*\[?\s*([A-Za-z0-9_-]{1,64})\s*:\s*(\d{1,7})\s*\]?\s*$")
#: A RAPTOR summary node cited alone: `<paper>:raptor:<level>.<n>`.
SUMMARY_REF = re.compile(r"^\s*\[?\s*([A-Za-z0-9_-]{1,64})\s*:\s*raptor\s*:\s*(\d{1,3})\.(\d{1,5})\s*\]?\s*$", re.I)
#: A full citation id in running text (the earlier answers of a conversation sent back over HTTP).
FULL_ID_IN_TEXT = re.compile(r"\b([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}):(\d{1,6})\b")
