"""An adapter for tests that plants one reply: it answers one (question, seed) itself and passes the rest on."""

from __future__ import annotations

from typing import Any


class PlantOne:
    """Wraps a replaying boundary; answers one question at one seed with reply text the test wrote.

    Its mode is ``authoring``, so lesson code treats every reply as unmeasured;
    the planted reply is the test's, never a model's.
    """

    mode = "authoring"

    def __init__(self, boundary: Any, *, question: str, seed: int, reply: str) -> None:
        self.boundary, self.question, self.seed, self.reply = boundary, question, seed, reply
        self.settings, self.model = boundary.settings, boundary.model

    def generate(self, question: str, messages: list[dict[str, Any]], **settings: Any) -> Any:
        """Return the planted reply for the planted question and seed; ask the wrapped boundary otherwise."""
        from openai.types.chat import ChatCompletion

        if question != self.question or settings.get("seed") != self.seed:
            return self.boundary.generate(question, messages, **settings)
        message = {"role": "assistant", "content": self.reply}
        return ChatCompletion.model_validate(
            {
                "id": "planted",
                "object": "chat.completion",
                "created": 0,
                "model": self.model,
                "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
            }
        )
