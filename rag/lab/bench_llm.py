"""``python -m rag bench llm``: grounded-QA accuracy and speed of each bundled GGUF model.

Each model runs in its own child process (so peak RSS is per model). For every model: a fixed set of
short grounded questions in English and Chinese (numbered sources, the answer is in them, scored by
an expected substring), prompt and generation tokens/s, time to first token over a ~900-token
context, the same with that context already in the KV cache (a follow-up question), and peak RSS.
"""

from __future__ import annotations

import argparse
import json
import logging
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from llama_index.core.base.llms.types import ChatMessage, MessageRole

logger = logging.getLogger(__name__)

SYSTEM_PROMPT = ("You answer questions using only the numbered sources the user gives. Answer briefly, in the "
                 "language of the question, and cite sources like [1]. If the sources do not contain the "
                 "answer, say so.")


@dataclass(frozen=True)
class QAItem:
    lang: str
    sources: tuple[str, ...]
    question: str
    expected: tuple[str, ...]  # any of these substrings counts as correct

    def prompt(self) -> str:
        numbered = "\n".join(f"[{i}] {text}" for i, text in enumerate(self.sources, 1))
        return f"Sources:\n{numbered}\n\nQuestion: {self.question}"


QA_ITEMS: tuple[QAItem, ...] = (
    QAItem("en", ("The Larkspur Library opens at 9 a.m. on weekdays and closes at 6 p.m. It is closed on Sundays.",
                  "Members may borrow up to 12 books at a time. The loan period is 21 days and can be renewed "
                  "twice online.",
                  "The library cafe on the ground floor serves coffee and sandwiches until 4 p.m."),
           "How many days is the loan period?", ("21",)),
    QAItem("en", ("Our compact cars cost 45 EUR per day, including insurance. Vans cost 80 EUR per day.",
                  "A rental can last at most 30 days. Drivers must be at least 21 years old.",
                  "Fuel is not included; return the car with a full tank."),
           "What is the daily price of a compact car?", ("45",)),
    QAItem("en", ("The Orion Bridge opened in 1998 after four years of construction.",
                  "The bridge is 1,240 metres long and carries about 38,000 vehicles a day.",
                  "A toll of 3 dollars is charged for cars crossing northbound."),
           "How long is the Orion Bridge?", ("1,240", "1240", "1 240")),
    QAItem("en", ("The museum's east wing was designed by the architect Helena Voss and opened in 2011.",
                  "Admission is free for visitors under 18.",
                  "The west wing houses the permanent collection of maritime paintings."),
           "Who designed the museum's east wing?", ("Voss",)),
    QAItem("zh", ("本店商品自签收之日起15天内可以无理由退货，退货运费由买家承担。",
                  "定制商品和已拆封的食品不支持退货。",
                  "客服工作时间为每天上午9点到晚上9点。"),
           "签收后多少天内可以退货？", ("15", "十五")),
    QAItem("zh", ("员工出差住宿费每晚最高报销350元，餐补每天80元。",
                  "出差需提前三个工作日在系统中提交申请。",
                  "报销单须在出差结束后30天内提交。"),
           "出差住宿每晚最多可以报销多少钱？", ("350",)),
    QAItem("zh", ("年度技术大会将于10月18日在杭州国际博览中心举行，预计参会人数为1200人。",
                  "大会设有人工智能、云计算和开源三个分论坛。",
                  "参会者需提前在官网完成注册。"),
           "年度技术大会在哪个城市举行？", ("杭州",)),
    QAItem("zh", ("公司年假规定：入职满一年的员工每年享有带薪年假5天，满十年的员工享有10天。",
                  "病假需提供医院证明。",
                  "未休完的年假可以顺延至次年第一季度。"),
           "入职满一年的员工每年有几天带薪年假？", ("5", "五")),
)

# Background paragraphs that pad the long-context probe to ~900 tokens; the answer is in one of them.
_FILLER = (
    "The city council approved a plan to renovate the central market, which was built in 1931 and has not been "
    "modernised since. Work will start in spring and the market will stay partly open during construction.",
    "Rainfall in the region was 20 percent below average last year, and reservoirs reached their lowest level "
    "in a decade by September. Farmers were asked to reduce irrigation at night.",
    "The school district hired forty new teachers for the autumn term, most of them for mathematics and science. "
    "Class sizes in primary schools will fall to an average of twenty-four pupils.",
    "A new bus line connects the airport with the university campus every fifteen minutes between 6 a.m. and "
    "midnight. Tickets can be bought in the transit app or from machines at the stops.",
    "The hospital opened a second emergency department in the northern district, cutting average waiting times "
    "from three hours to just under ninety minutes according to the first monthly report.",
    "Local bakeries reported a sharp rise in flour prices and several raised the price of a loaf by ten cents. "
    "The bakers' association expects prices to stabilise after the next harvest.",
)
LONG_ANSWER_SOURCE = ("The observatory on Mount Kestrel houses a telescope with a mirror 2.4 metres wide, "
                      "installed in 2019 and used by three universities.")
LONG_QUESTIONS = (("How wide is the mirror of the telescope on Mount Kestrel?", ("2.4",)),
                  ("In which year was the telescope on Mount Kestrel installed?", ("2019",)))


def long_context_sources(repeats: int = 3) -> tuple[str, ...]:
    sources = [text for _ in range(repeats) for text in _FILLER]
    sources.insert(len(sources) // 2, LONG_ANSWER_SOURCE)
    return tuple(sources)


def score(answer: str, expected: Sequence[str]) -> bool:
    lowered = answer.lower()
    return any(e.lower() in lowered for e in expected)


def run_model(name: str, cache_dir: Path, *, n_threads: int = 2, n_ctx: int = 4096,
              max_tokens: int = 96) -> dict[str, Any]:
    """Load one model in this process and measure it."""
    from rag.config import GenerationConfig, LLMConfig
    from rag.models.llms import load_embedded_llm

    started = time.monotonic()
    llm = load_embedded_llm(LLMConfig(embedded_model=name, n_ctx=n_ctx, n_threads=n_threads),
                            GenerationConfig(max_answer_tokens=max_tokens, temperature=0.0), cache_dir)
    result: dict[str, Any] = {"model": name, "load_s": round(time.monotonic() - started, 2), "items": []}
    prompt_tokens = prompt_s = gen_tokens = gen_s = 0.0
    for item in QA_ITEMS:
        answer = _ask(llm, item.prompt())
        stats = llm.last_stats
        prompt_tokens += stats.get("prompt_eval_tokens", 0)
        prompt_s += stats.get("prompt_eval_s", 0.0)
        gen_tokens += stats.get("gen_tokens", 0)
        gen_s += stats.get("gen_s", 0.0)
        result["items"].append({"lang": item.lang, "question": item.question, "answer": answer,
                                "correct": score(answer, item.expected), "ttft_s": round(stats["ttft_s"], 2)})
    for lang in ("en", "zh"):
        marks = [i["correct"] for i in result["items"] if i["lang"] == lang]
        result[f"accuracy_{lang}"] = f"{sum(marks)}/{len(marks)}"
    long_item = QAItem("en", long_context_sources(), LONG_QUESTIONS[0][0], LONG_QUESTIONS[0][1])
    context = long_item.prompt().rsplit("\n\nQuestion:", 1)[0]
    result["long_context_tokens"] = llm.count_tokens(SYSTEM_PROMPT + context)
    _ask(llm, "Say OK.")  # move the KV cache away from this context, so the first long call is cold
    for key, (question, expected) in zip(("cold", "cached"), LONG_QUESTIONS):
        answer = _ask(llm, f"{context}\n\nQuestion: {question}")
        stats = llm.last_stats
        result[f"long_ttft_{key}_s"] = round(stats["ttft_s"], 2)
        result[f"long_prompt_eval_tokens_{key}"] = stats.get("prompt_eval_tokens")
        result[f"long_correct_{key}"] = score(answer, expected)
        if key == "cold":
            prompt_tokens += stats.get("prompt_eval_tokens", 0)
            prompt_s += stats.get("prompt_eval_s", 0.0)
    result["prompt_tok_per_s"] = round(prompt_tokens / prompt_s, 1) if prompt_s else None
    result["gen_tok_per_s"] = round(gen_tokens / gen_s, 1) if gen_s else None
    result["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return result


def _ask(llm: Any, prompt: str) -> str:
    messages = [ChatMessage(role=MessageRole.SYSTEM, content=SYSTEM_PROMPT),
                ChatMessage(role=MessageRole.USER, content=prompt)]
    return "".join(r.delta or "" for r in llm.stream_chat(messages)).strip()


def main(argv: Sequence[str] | None = None) -> int:
    from rag.config import DEFAULT_HOME
    from rag.models.assets import GGUF_MODELS

    parser = argparse.ArgumentParser(prog="python -m rag bench llm", description=__doc__.split("\n")[0])
    parser.add_argument("--models", default=",".join(GGUF_MODELS), help="comma-separated (default: %(default)s)")
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_HOME, help="default: %(default)s")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--in-process", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(list(argv) if argv is not None else None)
    names = [n.strip() for n in args.models.split(",") if n.strip()]
    if args.in_process:
        print(json.dumps([run_model(n, args.cache_dir, n_threads=args.threads) for n in names], ensure_ascii=False))
        return 0
    results, status = [], 0
    for name in names:
        cmd = [sys.executable, "-m", "rag.lab.bench_llm", "--in-process", "--models", name,
               "--cache-dir", str(args.cache_dir), "--threads", str(args.threads)]
        child = subprocess.run(cmd, capture_output=True, text=True)
        if child.returncode != 0:
            last = (child.stderr.strip().splitlines() or ["no output"])[-1]
            print(f"error: {name}: {last}", file=sys.stderr)
            status = 1
            continue
        results.extend(json.loads(child.stdout.strip().splitlines()[-1]))
    if args.json:
        print(json.dumps({"models": results}, ensure_ascii=False, indent=2))
    else:
        _print_table(results)
    return status


def _print_table(results: list[dict[str, Any]]) -> None:
    header = ("model", "EN", "ZH", "prompt tok/s", "gen tok/s", "TTFT ~900 tok", "TTFT cached", "peak RSS")
    print(" | ".join(header))
    for r in results:
        print(" | ".join(str(v) for v in (
            r["model"], r["accuracy_en"], r["accuracy_zh"], r["prompt_tok_per_s"], r["gen_tok_per_s"],
            f"{r['long_ttft_cold_s']} s ({r['long_context_tokens']} tok)", f"{r['long_ttft_cached_s']} s",
            f"{r['peak_rss_mb']} MB")))
        for item in r["items"]:
            mark = "ok " if item["correct"] else "BAD"
            print(f"    {mark} [{item['lang']}] {item['question']} -> {item['answer'][:100]!r}")


if __name__ == "__main__":
    raise SystemExit(main())
