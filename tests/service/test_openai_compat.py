"""Any OpenAI client talks to the papers: the `openai` package against a real server, whole and streamed."""

from __future__ import annotations

import openai
import pytest

from tests.served import KEY, Served

QUESTION = "How many queries was FlashRank trained on?"


@pytest.fixture
def client(server: Served) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key=KEY, max_retries=0)


def test_openai_client_gets_the_answer_and_its_sources(client: openai.OpenAI, sample_pdf_ids: dict[str, str]) -> None:
    models = [m.id for m in client.models.list()]
    assert models[0] == "paperscope" and "paperscope:papers" in models
    completion = client.chat.completions.create(model="paperscope", messages=[{"role": "user", "content": QUESTION}])
    text = completion.choices[0].message.content or ""
    assert "1.2 million queries" in text and "\n\nSources:\n[1] FlashRank" in text
    assert f"{sample_pdf_ids['flashrank']}:" in text  # citation ids: a conversation sent back keeps its paper
    extra = completion.model_extra or {}
    assert extra["paperscope"]["track"] == "A" and extra["paperscope"]["sources"]
    assert completion.choices[0].finish_reason == "stop" and completion.model == "paperscope"


def test_a_follow_up_sent_back_as_plain_messages_stays_on_its_paper(
    client: openai.OpenAI, sample_pdf_ids: dict[str, str]
) -> None:
    first = client.chat.completions.create(
        model="paperscope", messages=[{"role": "user", "content": "What does Marten-1B pretrain on?"}]
    )
    follow = client.chat.completions.create(
        model="paperscope",
        messages=[
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "What does Marten-1B pretrain on?"},
            {"role": "assistant", "content": first.choices[0].message.content or ""},
            {"role": "user", "content": [{"type": "text", "text": "What about its ablation?"}]},
        ],
        extra_body={"paperscope": {"k": 2}},
    )
    answer = (follow.model_extra or {})["paperscope"]
    assert {s["doc_id"] for s in answer["sources"]} == {sample_pdf_ids["marten"]}
    assert len(answer["sources"]) <= 2


def test_openai_client_streams(client: openai.OpenAI) -> None:
    stream = client.chat.completions.create(
        model="paperscope:papers", messages=[{"role": "user", "content": QUESTION}], stream=True
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert "1.2 million queries" in text and "\n\nSources:\n[1] FlashRank" in text
    last = chunks[-1]
    assert last.choices[0].finish_reason == "stop" and (last.model_extra or {})["paperscope"]["sources"]
    assert all(c.choices[0].finish_reason is None for c in chunks[:-1])


def test_openai_errors(client: openai.OpenAI) -> None:
    with pytest.raises(openai.NotFoundError, match="is not served here"):
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": QUESTION}])
    with pytest.raises(openai.UnprocessableEntityError, match=r"unknown option 'paperscope\.kk'"):
        client.chat.completions.create(
            model="paperscope", messages=[{"role": "user", "content": QUESTION}], extra_body={"paperscope": {"kk": 1}}
        )
    with pytest.raises(openai.BadRequestError, match="the last message must be the user's question"):
        client.chat.completions.create(model="paperscope", messages=[{"role": "assistant", "content": "Hi"}])
    with pytest.raises(openai.NotFoundError, match="knowledge base 'nosuchkb' does not exist"):
        client.chat.completions.create(model="paperscope:nosuchkb", messages=[{"role": "user", "content": QUESTION}])
