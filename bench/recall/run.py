#!/usr/bin/env python3
"""Planted-facts recall benchmark: is the evidence in the prompt?

Long chats (420 turns, users 10-150 words, replies 50-400, in English, Chinese, Russian and
Japanese) are written by plain SQL, as a front end would. Facts are stated in the first turns,
some are updated at turn 250, near-duplicates (other codes, other relatives) sit beside them,
and questions come at the end: exact-word, paraphrased, and with no answer; the English chat
also has small talk every sixth turn ("haha nice", "good morning!"), and small talk comes at
the end too (what it recalls is noise). Each question is
scored on the dry run's prompt (`autonous context`), under the defaults except
MAX_CONTEXT_TOKENS (2000 / 4000 / 16000, or --budgets; "default" leaves it unset), with recall on
(the default) and off.

  hit  = the fact's value is somewhere in the prompt (an updated fact: its new value)
  cost = evidence tokens of questions that have no answer in the chat, and of small talk

Usage: bench/recall/run.py BINARY [--turns N] [--latency] [--rows 1000,10000,100000,1000000]
--latency: gather + select time (the recall and documents gatherers' own clocks in the
worker's context.compressed events) over 30 questions for chats of the given sizes.
--embeddings (with --latency): also with EMBEDDING_MODEL set against the stub, the chat's newest
10 000 messages (the vector search's scan cap) given vectors first: the recall gatherer's time
then includes the vector search; the embeddings call's own time is shown apart.
"""
import argparse, itertools, json, os, random, sqlite3, statistics, subprocess, sys, tempfile, time

FILLER = {
    "en": ("river stone garden window coffee letter market bridge winter summer engine ticket museum "
           "kitchen lesson doctor travel music paper forest camera island school dinner morning "
           "evening weekend project meeting report picture movie book story train bus weather rain "
           "sunny cloudy friend colleague neighbour holiday beach mountain lake city village street "
           "shop bakery bread cheese apple orange tomato salad soup pasta chicken recipe oven table "
           "chair sofa lamp plant flower tree bird cat garden fence paint color blue green yellow "
           "quiet loud happy tired busy early late quick slow maybe probably really actually").split(),
    "ru": ("река камень сад окно кофе письмо рынок мост зима лето мотор билет музей кухня урок "
           "врач поездка музыка бумага лес камера остров школа ужин утро вечер выходные проект "
           "встреча отчёт картина фильм книга история поезд автобус погода дождь солнце облако "
           "друг коллега сосед отпуск пляж гора озеро город деревня улица магазин хлеб сыр яблоко "
           "апельсин помидор салат суп паста курица рецепт духовка стол стул диван лампа растение "
           "цветок дерево птица кошка забор краска цвет синий зелёный жёлтый тихо громко рано поздно").split(),
    "zh": ("今天 天气 很好 我们 一起 去 公园 散步 看到 很多 花 和 树 晚上 吃饭 的 时候 聊 了 "
           "工作 学习 电影 音乐 书 朋友 同事 周末 旅行 火车 飞机 城市 乡村 早上 咖啡 面包 水果 "
           "苹果 橙子 西红柿 汤 米饭 面条 鸡肉 做饭 厨房 桌子 椅子 沙发 灯 植物 花园 小鸟 猫 "
           "颜色 蓝色 绿色 黄色 安静 热闹 开心 累 忙 快 慢 也许 可能 其实 真的 下雨 晴天 阴天").split(),
    "ja": ("今日 は 天気 が いい です ね 公園 を 散歩 しました 花 と 木 が たくさん あります "
           "夜 ご飯 を 食べ ながら 仕事 や 勉強 の 話 を しました 映画 音楽 本 友達 同僚 週末 "
           "旅行 電車 飛行機 町 村 朝 コーヒー パン 果物 りんご みかん トマト スープ ご飯 "
           "麺 鶏肉 料理 台所 机 椅子 ソファ 電気 植物 庭 鳥 猫 色 青 緑 黄色 静か 賑やか "
           "楽しい 疲れた 忙しい 速い 遅い たぶん 本当に 雨 晴れ 曇り").split(),
}
JOIN = {"en": " ", "ru": " ", "zh": "", "ja": ""}
# Small talk in the English chat's history (every sixth user turn) and at its end.
SMALL_TALK = ["haha nice", "good morning!", "see you tomorrow", "thanks, that helps a lot",
              "ok cool", "lol that's funny", "good night!", "sounds good to me",
              "awesome, thank you!", "hello again"]
SMALL_TALK_REPLIES = ["Glad you liked it!", "Good morning! How can I help today?",
                      "See you tomorrow, take care!", "You're welcome, happy to help.",
                      "Great!", "Haha, glad it made you laugh.", "Good night, sleep well!"]

# (turn, statement) facts; questions: (kind, text, value that must be in the prompt)
FACTS = {
    "en": {
        "facts": [(2, "By the way, my locker code at the gym is 4471."),
                  (3, "The wifi code at the office is 8812, and the alarm code at home is 3390."),
                  (4, "My sister Mirela lives in Porto and works as a pharmacist."),
                  (5, "My address is 12 Oak Street, Springfield."),
                  (6, "I'm allergic to penicillin, remember that."),
                  (250, "Big news: I moved, my address is now 48 Birch Avenue, Shelbyville.")],
        "questions": [("exact", "What is my locker code at the gym?", "4471"),
                      ("exact", "Where does my sister live?", "Porto"),
                      ("exact", "What am I allergic to?", "penicillin"),
                      ("updated", "What is my address now?", "48 Birch"),
                      ("paraphrase", "Which number opens my gym locker?", "4471"),
                      ("paraphrase", "In which city does Mirela work?", "Porto"),
                      ("paraphrase", "Which antibiotic must I avoid?", "penicillin"),
                      ("none", "What is the name of my dog?", None),
                      ("smalltalk", "haha nice", None), ("smalltalk", "good morning!", None),
                      ("smalltalk", "see you tomorrow", None),
                      ("smalltalk", "ok cool, thanks!", None)]},
    "zh": {
        "facts": [(2, "对了，我在健身房的储物柜密码是4471。"),
                  (3, "办公室的无线网密码是8812，家里的报警器密码是3390。"),
                  (4, "我姐姐住在杭州，她是药剂师。"),
                  (5, "我的地址是朝阳路12号。"),
                  (250, "告诉你，我搬家了，新地址是建国路48号。")],
        "questions": [("exact", "我的储物柜密码是多少？", "4471"),
                      ("exact", "我姐姐住在哪里？", "杭州"),
                      ("updated", "我现在的地址是什么？", "建国路48号"),
                      ("paraphrase", "健身房柜子的号码是多少？", "4471"),
                      ("none", "我的狗叫什么名字？", None)]},
    "ru": {
        "facts": [(2, "Кстати, код от моего шкафчика в спортзале — 4471."),
                  (3, "Код вайфая в офисе 8812, а код сигнализации дома 3390."),
                  (4, "Моя сестра Мирела живёт в Казани и работает фармацевтом."),
                  (5, "Мой адрес: улица Дубовая, 12."),
                  (250, "Новости: я переехал, мой адрес теперь улица Берёзовая, 48.")],
        "questions": [("exact", "Какой код от шкафчика в спортзале?", "4471"),
                      ("exact", "Где живёт моя сестра?", "Казан"),
                      ("updated", "Какой у меня сейчас адрес?", "Берёзовая"),
                      ("paraphrase", "Какие цифры открывают мой шкаф?", "4471"),
                      ("none", "Как зовут мою собаку?", None)]},
    "ja": {
        "facts": [(2, "ところで、ジムのロッカーの暗証番号は4471です。"),
                  (3, "オフィスのWi-Fiの番号は8812、家の警報の番号は3390です。"),
                  (4, "姉は札幌に住んでいて、薬剤師をしています。"),
                  (5, "私の住所は桜町12番地です。"),
                  (250, "引っ越しました。新しい住所は梅町48番地です。")],
        "questions": [("exact", "ロッカーの暗証番号は何ですか？", "4471"),
                      ("exact", "姉はどこに住んでいますか？", "札幌"),
                      ("updated", "今の住所はどこですか？", "梅町48"),
                      ("paraphrase", "ジムの鍵の数字は？", "4471"),
                      ("none", "私の犬の名前は？", None)]},
}


def filler(lang, rng, lo, hi):
    n = rng.randint(lo, hi)
    return JOIN[lang].join(rng.choice(FILLER[lang]) for _ in range(n))


def build_db(path, binary, turns):
    env = dict(os.environ, DB_PATH=path)
    subprocess.run([binary, "migrate"], env=env, check=True, capture_output=True)
    db = sqlite3.connect(path)
    rng = random.Random(14)
    for lang, spec in FACTS.items():
        facts = dict(spec["facts"])
        rows = []
        for t in range(turns):
            at = f"2026-0{1 + t // 140}-{1 + (t % 140) // 5:02d}T{8 + t % 12:02d}:{t % 60:02d}:00.000Z"
            user = facts.get(t) or filler(lang, rng, 10, 150 if lang in ("en", "ru") else 60)
            reply = filler(lang, rng, 50, 400 if lang in ("en", "ru") else 160)
            if lang == "en" and t not in facts and t % 6 == 1:
                user, reply = rng.choice(SMALL_TALK), rng.choice(SMALL_TALK_REPLIES)
            rows += [(lang, "user", user, at), (lang, "assistant", reply, at)]
        db.executemany("INSERT INTO history(chat_id, role, text, created_at) VALUES (?,?,?,?)", rows)
    db.commit()
    db.close()
    subprocess.run([binary, "migrate"], env=env, check=True, capture_output=True)  # indexes


def dry_run(binary, path, chat, text, budget, recall=True):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CONTEXT_", "MAX_", "RECALL", "HISTORY_", "OPENAI_MODEL", "EMBEDDING_"))}
    env.update(DB_PATH=path, RECALL="on" if recall else "off", LOG_LEVEL="error")
    if budget != "default":  # "default": MAX_CONTEXT_TOKENS unset (the gpt-4o-mini preset)
        env["MAX_CONTEXT_TOKENS"] = str(budget)
    r = subprocess.run([binary, "context", "--chat", chat, "--text", text], env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(r.stderr)
    return json.loads(r.stdout)


def recall_table(binary, turns, budgets):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "recall.db")
        build_db(path, binary, turns)
        print(f"planted facts, {turns}-turn chats in 4 languages, dry run under the defaults; hit = value in the prompt")
        print(f"{'budget':>7} {'recall':>6} {'exact':>9} {'updated':>9} {'paraphrase':>11} {'stale only':>10} {'no-answer evidence tokens (mean)':>33} {'small talk evidence (mean, max)':>32}")
        for budget in budgets:
            for on in (True, False):
                score = {"exact": [], "updated": [], "paraphrase": []}
                stale, cost, chat_cost = 0, [], []
                for lang, spec in FACTS.items():
                    for kind, q, value in spec["questions"]:
                        j = dry_run(binary, path, lang, q, budget, on)
                        prompt = "\n".join(m["content"] for m in j["messages"])
                        if kind == "none":
                            cost.append(j.get("evidence_tokens", 0))
                            continue
                        if kind == "smalltalk":
                            chat_cost.append(j.get("evidence_tokens", 0))
                            continue
                        score[kind].append(value in prompt)
                        if kind == "updated" and value not in prompt:
                            old = {"en": "12 Oak", "zh": "朝阳路12号", "ru": "Дубовая", "ja": "桜町12"}[lang]
                            stale += old in prompt
                fmt = lambda xs: f"{sum(xs)}/{len(xs)} {sum(xs) / len(xs):.2f}"
                print(f"{budget:>7} {'on' if on else 'off':>6} {fmt(score['exact']):>9} {fmt(score['updated']):>9} "
                      f"{fmt(score['paraphrase']):>11} {stale:>10} {statistics.mean(cost):>33.0f} "
                      f"{statistics.mean(chat_cost):>25.0f}, {max(chat_cost):>5}")


def zipf_vocabulary(rng, n=20000):
    """n pseudo-words and Zipf weights (the i-th most frequent word ∝ 1/i), as natural text has."""
    syl = "ka lo mi ne ru sa te vo pi da ge ho ju ke la mo nu pe ri so ta vu be ci do fa gi".split()
    words = set()
    while len(words) < n:
        words.add("".join(rng.choice(syl) for _ in range(rng.randint(2, 4))))
    words = sorted(words)
    rng.shuffle(words)
    return words, [1.0 / (i + 1) for i in range(n)]


def add_vectors(path, rows, dims):
    """Unit vectors for the chat's newest min(rows, 10000) messages (their values do not matter
    to the cost)."""
    import array, math
    rng = random.Random(11)
    db = sqlite3.connect(path)
    ids = [r[0] for r in db.execute(
        "SELECT id FROM history WHERE chat_id = 'big' ORDER BY id DESC LIMIT 10000")]
    batch = []
    for i in ids:
        v = [rng.gauss(0, 1) for _ in range(dims)]
        n = math.sqrt(sum(x * x for x in v))
        batch.append((i, "stub-embed", "big", array.array("f", [x / n for x in v]).tobytes()))
    db.executemany("INSERT INTO history_vectors(id, model, chat_id, vector) VALUES (?,?,?,?)", batch)
    db.commit()
    db.close()


QUESTIONS = 100


def latency(binary, sizes, embeddings=False, dims=256):  # dims: the stub's vectors
    rng = random.Random(7)
    words, weights = zipf_vocabulary(rng)
    cum = list(itertools.accumulate(weights))
    print("gather + select latency (recall + documents gatherers, the worker's own clock in context.compressed),")
    print(f"{QUESTIONS} turns of one chat by a worker (a warm connection) against the stub, budget 4 000;")
    print("text: Zipf-distributed 20 000-word vocabulary, 10-60 words a message; each question is 4 words")
    print("of a random stored message (terms of every frequency: rare ones searched, common ones dropped)")
    print("found: the questioned message among the hits (the text's words are Zipf-common: at a million")
    print("rows most of them are in over 1 000 rows, too common to search)")
    if embeddings:
        print(f"with EMBEDDING_MODEL (stored vectors of {dims} dimensions for the newest 10 000 messages):")
        print("recall includes the vector search; embed = the /v1/embeddings call to the local stub")
    print("step: the whole evidence step of the turn (index catch-up, embeddings, gatherers, packing,")
    print("counting the evidence's tokens), also from the event (evidence_us)")
    print(f"{'rows':>9} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'step p50':>8} {'step p99':>8} {'searched':>9} {'found':>7}  (index time)"
          + ("  embed p50/p99 ms" if embeddings else ""))
    for rows in sizes:
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "lat.db")
            env = dict(os.environ, DB_PATH=path, LOG_LEVEL="error")
            subprocess.run([binary, "migrate"], env=env, check=True, capture_output=True)
            db = sqlite3.connect(path)
            batch, sample = [], []
            for i in range(rows):
                text = " ".join(rng.choices(words, cum_weights=cum, k=rng.randint(10, 60)))
                batch.append(("big", "user" if i % 2 == 0 else "assistant", text))
                if rng.random() < QUESTIONS / rows:
                    sample.append(text)
                if len(batch) == 50000:
                    db.executemany("INSERT INTO history(chat_id, role, text) VALUES (?,?,?)", batch)
                    batch = []
            db.executemany("INSERT INTO history(chat_id, role, text) VALUES (?,?,?)", batch)
            db.commit()
            db.close()
            t0 = time.time()
            subprocess.run([binary, "migrate"], env=env, check=True, capture_output=True)
            indexed = time.time() - t0
            if embeddings:
                add_vectors(path, rows, dims)
            times, searched, found, embed, whole = [], 0, 0, [], []
            # Measured where it runs: a worker's turns (a warm connection), against the stub.
            stub = os.path.join(os.path.dirname(os.path.dirname(binary)), "autonous-stub", "autonous-stub")
            port_file = os.path.join(d, "port")
            srv = subprocess.Popen([stub, "--port-file", port_file], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            while not (os.path.exists(port_file) and open(port_file).read().strip()):
                time.sleep(0.05)
            try:
                db = sqlite3.connect(path)
                db.executemany("INSERT INTO tasks(chat_id, text) VALUES ('big', ?)",
                               [(" ".join(rng.sample(t.split(), 4)),) for t in (sample * QUESTIONS)[:QUESTIONS]])
                db.commit()
                db.close()
                wenv = dict(env, OPENAI_BASE_URL=f"http://127.0.0.1:{open(port_file).read().strip()}/v1",
                            MAX_CONTEXT_TOKENS="4000", WORKER_CONCURRENCY="1", POLL_INTERVAL_MS="10")
                if embeddings:
                    wenv["EMBEDDING_MODEL"] = "stub-embed"
                subprocess.run([binary, "worker", "--drain"], env=wenv, check=True, capture_output=True, timeout=600)
            finally:
                srv.terminate()
                srv.wait()
            db = sqlite3.connect(path)
            for task, payload in db.execute(
                    "SELECT task_id, payload FROM events WHERE type = 'context.compressed'").fetchall():
                j = json.loads(payload)
                times.append(sum(g["us"] for g in j["recall"]["gatherers"] if g["name"] != "embeddings") / 1000.0)
                embed += [g["us"] / 1000.0 for g in j["recall"]["gatherers"] if g["name"] == "embeddings"]
                searched += bool(j["recall"]["terms"])
                whole.append(j["evidence_us"] / 1000.0)
                question = set(db.execute("SELECT text FROM tasks WHERE id = ?", (task,)).fetchone()[0].split())
                hits = [i["id"] for i in j["recall"]["items"] if "score" in i]
                found += any(question <= set(db.execute("SELECT text FROM history WHERE id = ?", (h,)).fetchone()[0].split())
                             for h in hits)
            db.close()
            times.sort()
            extra = ""
            if embed:
                embed.sort()
                extra = f"  {statistics.median(embed):.2f} / {pct(embed, 0.99):.2f}"
            whole.sort()
            print(f"{rows:>9} {statistics.median(times):>8.2f} {pct(times, 0.99):>8.2f} {times[-1]:>8.2f}"
                  f" {statistics.median(whole):>8.2f} {pct(whole, 0.99):>8.2f} {searched:>5}/{QUESTIONS}"
                  f" {found:>3}/{QUESTIONS}  ({indexed:.0f} s)" + extra)


def pct(sorted_values, q):
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--turns", type=int, default=420)
    ap.add_argument("--budgets", default="2000,4000,16000",
                    help="comma-separated MAX_CONTEXT_TOKENS values; 'default' leaves it unset")
    ap.add_argument("--latency", action="store_true")
    ap.add_argument("--embeddings", action="store_true")
    ap.add_argument("--rows", default="1000,10000,100000,1000000")
    a = ap.parse_args()
    if a.latency:
        latency(a.binary, [int(x) for x in a.rows.split(",")], a.embeddings)
    else:
        recall_table(a.binary, a.turns, [b if b == "default" else int(b) for b in a.budgets.split(",")])
