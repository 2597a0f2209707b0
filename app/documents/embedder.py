"""The app's own document embedding model (WordLlama, `embed.py`) as an `Embedder`: what the
local server answers /v1/embeddings with when no embedding GGUF was chosen.

Guarantees: the facts name it as `embed.NAME` (256 dimensions, truncatable: WordLlama is
trained Matryoshka-style, so a prefix of a vector, renormalised, is a vector); texts only — a
token array is a `NotEmbedded` that says WordLlama has no token ids of ours; an input with no
tokens, or more than `CONTEXT`, is a `NotEmbedded` before anything is embedded (its batches are
padded to their longest input, so the cap bounds the memory one request takes).
"""

from __future__ import annotations

from collections.abc import Sequence

from app.documents.embed import DIM, NAME, embed, token_counts
from app.domain.embedding import Embedded, EmbedderFacts, EmbedInput, NotEmbedded, Refusal

CONTEXT = 2048  # tokens one input may have


class WordLlamaEmbedder:
    """WordLlama, served."""

    facts = EmbedderFacts(NAME, DIM, CONTEXT, truncatable=True)

    def embed(self, inputs: Sequence[EmbedInput]) -> Embedded | NotEmbedded:
        texts: list[str] = []
        for index, item in enumerate(inputs):
            if not isinstance(item, str):
                why = (
                    f"input {index} is a token array, and {NAME} cannot read one: it has its own"
                    " tokenizer, with no token ids of this server's; send the text"
                )
                return NotEmbedded(index, Refusal.NO_TOKEN_IDS, why)
            texts.append(item)
        counts = token_counts(texts)
        for index, count in enumerate(counts):
            if count == 0:
                why = f"input {index} is empty: it has no tokens {NAME} knows"
                return NotEmbedded(index, Refusal.EMPTY, why)
            if count > CONTEXT:
                why = f"input {index} is too large: {count} tokens; {NAME} takes {CONTEXT} at most"
                return NotEmbedded(index, Refusal.TOO_LONG, why)
        vectors = embed(texts).astype("<f4")
        return Embedded(vectors.tobytes(), DIM, tuple(counts))


__all__ = ["CONTEXT", "WordLlamaEmbedder"]
