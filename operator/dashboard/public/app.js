// The dashboard page: hash routes over the server's JSON API, re-rendered
// when the server's event stream says the store changed. Every value from
// the store (run ids, headers, errors, keys) is user data: it reaches the
// page only as text nodes (`textContent`), never as markup.

const token = new URLSearchParams(location.search).get("token");
const main = document.getElementById("main");
const RUN_STATES = ["pending", "running", "awaiting_signal", "scheduled", "cancelling", "succeeded", "failed", "cancelled"];
const ACTIVE = new Set(["pending", "running", "awaiting_signal", "scheduled", "cancelling", "waiting"]);

/** An element with attributes (`on*` functions become listeners) and children (strings become text nodes). */
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

function headers(extra) {
  return { ...(token === null ? {} : { authorization: `Bearer ${token}` }), ...extra };
}

async function api(path) {
  const res = await fetch(path, { headers: headers() });
  const body = await res.json().catch(() => ({ error: { message: `HTTP ${res.status}` } }));
  if (!res.ok) throw Object.assign(new Error(body.error?.message ?? `HTTP ${res.status}`), { status: res.status, code: body.error?.code });
  return body;
}

async function post(path, body) {
  const res = await fetch(path, { method: "POST", headers: headers({ "content-type": "application/json" }), body: JSON.stringify(body ?? {}) });
  const out = await res.json().catch(() => ({ error: { message: `HTTP ${res.status}` } }));
  if (!res.ok) throw new Error(out.error?.message ?? `HTTP ${res.status}`);
  return out;
}

function toast(text, bad) {
  const box = document.getElementById("toast");
  const el = h("div", { class: bad ? "bad" : "" }, text);
  box.append(el);
  setTimeout(() => el.remove(), bad ? 10000 : 4000);
}

function time(ms) {
  if (ms === undefined || ms === null) return "-";
  return new Date(ms)
    .toISOString()
    .replace("T", " ")
    .replace(/\.\d+Z$/, "Z");
}

function age(ms) {
  if (ms === undefined || ms === null || !Number.isFinite(ms)) return "-";
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86400)}d ${Math.floor((s % 86400) / 3600)}h`;
}

function tone(state) {
  if (state === "succeeded" || state === "continued" || state === "delivered") return "ok";
  if (state === "failed" || state === "dead_lettered" || state === "dead" || state === "timed_out") return "bad";
  if (ACTIVE.has(state) || state === "cancelled" || state === "retried" || state === "put_back" || state === "interrupted") return "warn";
  return "";
}

function stateBadge(state) {
  return h("span", { class: `state ${tone(state)}`, "data-state": state }, state.replace("_", " "));
}

function table(head, rows, numeric = []) {
  return h(
    "table",
    {},
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        head.map((t, i) => h("th", { class: numeric.includes(i) ? "num" : "" }, t)),
      ),
    ),
    h("tbody", {}, rows.length === 0 ? h("tr", {}, h("td", { colspan: head.length, class: "muted" }, "nothing here")) : rows),
  );
}

function runLink(id) {
  return h("a", { href: `#/run/${encodeURIComponent(id)}`, class: "mono", "data-run": id }, id);
}

function fields(pairs) {
  return h(
    "dl",
    { class: "fields" },
    pairs.filter(([, v]) => v !== undefined && v !== null && v !== "").flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]),
  );
}

function headersText(hs) {
  const e = Object.entries(hs ?? {});
  return e.length === 0 ? undefined : e.map(([k, v]) => `${k}=${v}`).join(", ");
}

// ---- pages ----------------------------------------------------------------

function shardTitle(shard) {
  return shard === null ? null : h("h2", { "data-shard-title": shard }, `Shard ${shard}`);
}

const countsText = (c) => ["pending", "scheduled", "claimed", "done", "dead"].map((k) => `${k} ${c[k]}`).join(", ");

/**
 * A button that recounts queue `queue`'s stats record from its jobs through the owner (on a sharded store, shard
 * `shard`'s), asking first with what the dry run found and would write; the recount carries that plan's token, so
 * the owner refuses it when a job moved since.
 */
function recountButton(queue, shard) {
  const enc = encodeURIComponent(queue);
  const where = shard === null || shard === undefined ? {} : { shard };
  const recount = async () => {
    try {
      const plan = await post(`/api/queues/${enc}/recount`, { ...where, dryRun: true });
      const found = plan.damage !== undefined ? `Its stats record is damaged (${plan.damage})` : "Its stats record reads";
      const question = plan.changed
        ? `Recount the stats of queue ${queue}? ${found}. The recount writes ${countsText(plan.recounted)}, counted from its jobs.`
        : `Queue ${queue}'s stats record already holds what its jobs count: nothing to write.`;
      if (!plan.changed) return toast(question);
      await action(question, `/api/queues/${enc}/recount`, { ...where, plan: plan.plan }, () => `stats of queue ${queue} recounted`);
    } catch (e) {
      toast(e.message, true);
    }
  };
  return h("button", { class: "danger", "data-action": "recount", "data-queue": queue, onclick: recount }, "Recount stats");
}

/** Queues whose stats record does not read (every move of them is refused), each with the recount. */
function damagedStats(hl, shard) {
  if (!hl.damagedStats?.length) return null;
  return h(
    "div",
    { class: "error", "data-damaged-stats": shard ?? "" },
    h("p", {}, `${hl.damagedStats.length} queue(s) cannot move jobs: their stats record is damaged. Recount it from the queue's jobs:`),
    h(
      "ul",
      {},
      ...hl.damagedStats.map((d) =>
        h("li", { "data-damaged-queue": d.queue }, h("span", { class: "mono" }, d.queue), `: ${d.detail} `, recountButton(d.queue, shard)),
      ),
    ),
  );
}

function healthSection(hl, shard) {
  const now = hl.at;
  const cards = h(
    "div",
    { class: "cards" },
    [
      ["dead letters", hl.deadLetters],
      ["WAL objects", hl.walObjects],
      ["last checkpoint", hl.checkpoint ? `${age(now - hl.checkpoint.writtenAt)} ago` : "none yet"],
    ].map(([label, value]) =>
      h("div", { class: "card", "data-card": label }, h("div", { class: "value" }, String(value)), h("div", { class: "label" }, label)),
    ),
  );
  const rows = hl.queues.map((q) =>
    h(
      "tr",
      { "data-queue": q.queue },
      h("td", { class: "mono" }, q.queue),
      ...["pending", "scheduled", "claimed", "done", "dead"].map((k) => h("td", { class: "num" }, String(q.counts[k]))),
      h("td", { class: "num" }, q.oldestPendingAt === undefined ? "-" : `${q.oldestApproximate ? "≥ " : ""}${age(now - q.oldestPendingAt)}`),
    ),
  );
  return [cards, damagedStats(hl, shard), table(["queue", "pending", "scheduled", "claimed", "done", "dead", "oldest pending"], rows, [1, 2, 3, 4, 5, 6])];
}

async function overview() {
  const { shards } = await api("/api/queues");
  return [
    h("h1", {}, "Queues"),
    shards.map((s) =>
      h(
        "section",
        { "data-shard": s.shard ?? "" },
        shardTitle(s.shard),
        s.health === null ? h("p", { class: "muted" }, "no owner has opened this shard yet") : healthSection(s.health, s.shard),
      ),
    ),
  ];
}

async function owners() {
  const { at, owners } = await api("/api/owners");
  const rows = owners.map((o) =>
    h(
      "tr",
      { "data-owner-shard": o.shard ?? "", "data-lease-expires": o.leaseExpiresAt ?? "" },
      h("td", {}, o.shard === null ? "-" : String(o.shard)),
      h("td", { class: o.owner === null ? "error mono" : "mono" }, o.owner ?? "none"),
      h(
        "td",
        { class: o.leaseExpiresAt !== null && o.leaseExpiresAt < at ? "error" : "" },
        o.leaseExpiresAt === null ? "-" : o.leaseExpiresAt >= at ? `in ${age(o.leaseExpiresAt - at)}` : `${age(at - o.leaseExpiresAt)} ago`,
      ),
      h("td", { class: "num" }, o.backlog === null ? "-" : String(o.backlog.pending + o.backlog.scheduled)),
      h("td", { class: "num" }, o.backlog === null ? "-" : String(o.backlog.running)),
      h("td", { class: "num" }, String(o.inbox.requests)),
      h("td", {}, o.inbox.oldestMs === null ? "-" : age(o.inbox.oldestMs)),
    ),
  );
  const unowned = owners.filter((o) => o.owner === null).length;
  return [
    h("h1", {}, "Owners"),
    table(["shard", "owner", "lease expires", "backlog", "running", "inbox", "oldest request"], rows, [3, 4, 5]),
    unowned > 0 ? h("p", { class: "error" }, `${unowned} of ${owners.length} without an owner: no worker holds the lease, so nothing runs there`) : null,
  ];
}

/** The step job's id, state and attempt, and how often it was requeued when it was. */
function stepJobText(j) {
  const requeued = j.requeues === undefined ? "" : `, requeued ${j.requeues === 1 ? "once" : `${j.requeues} times`}`;
  return `${j.id} (${j.state}, attempt ${j.attempt} of ${j.maxAttempts}${requeued})`;
}

function runRows(runs) {
  return runs.map((r) =>
    h(
      "tr",
      { "data-row": r.runId },
      h("td", {}, runLink(r.runId)),
      h("td", {}, r.workflow ? `${r.workflow}${r.kind === "job" ? " (job)" : ""}` : "-"),
      h("td", {}, stateBadge(r.state)),
      h("td", {}, `${r.step}${r.stepName ? ` ${r.stepName}` : ""}`),
      h("td", { class: "num" }, String(r.attempt)),
      h("td", {}, time(r.submittedAtMs)),
      h("td", {}, time(r.updatedAtMs)),
      h("td", { class: "error" }, r.error ?? (r.signal ? `waits for ${r.signal.key}` : "")),
    ),
  );
}

async function runs(params) {
  const state = params.get("state") ?? "";
  const workflow = params.get("workflow") ?? "";
  const cursor = params.get("cursor") ?? "";
  const q = new URLSearchParams();
  if (state) q.set("state", state);
  if (workflow) q.set("workflow", workflow);
  if (cursor) q.set("cursor", cursor);
  const page = await api(`/api/runs?${q}`);
  const go = (next) => {
    const p = new URLSearchParams(next);
    for (const [k, v] of [...p]) if (v === "") p.delete(k);
    location.hash = `#/runs?${p}`;
  };
  const stateSelect = h("select", { name: "state", onchange: (e) => go({ state: e.target.value, workflow }) }, [
    h("option", { value: "" }, "every state"),
    ...RUN_STATES.map((s) => h("option", { value: s, selected: s === state }, s.replace("_", " "))),
  ]);
  const wf = h("input", { name: "workflow", placeholder: "workflow or job name", value: workflow });
  const form = h(
    "form",
    {
      class: "toolbar",
      onsubmit: (e) => {
        e.preventDefault();
        go({ state, workflow: wf.value.trim() });
      },
    },
    stateSelect,
    wf,
    h("button", { type: "submit" }, "Filter"),
  );
  const more = page.nextCursor ? h("button", { onclick: () => go({ state, workflow, cursor: page.nextCursor }) }, "Next page") : null;
  return [
    h("h1", {}, "Runs"),
    form,
    table(["run", "workflow", "state", "step", "attempt", "submitted", "updated", "error / wait"], runRows(page.runs), [4]),
    unreadableList(page.unreadable, "runs", (u) => u.runId),
    h("div", { class: "toolbar" }, cursor ? h("button", { onclick: () => go({ state, workflow }) }, "First page") : null, more),
  ];
}

// Items a listing could not read (a damaged record): each named with the reason, below the ones it could; `mend` gives an item's repair button, if any.
function unreadableList(items, what, idOf, mend = () => null) {
  if (!items?.length) return null;
  return h(
    "div",
    { class: "error", id: "unreadable" },
    h("p", {}, `${items.length} ${what} could not be read:`),
    h("ul", {}, ...items.map((u) => h("li", { "data-unreadable": idOf(u) }, h("span", { class: "mono" }, idOf(u)), `: ${u.reason} `, mend(u)))),
  );
}

function timelineText(e) {
  switch (e.kind) {
    case "submitted":
      return "submitted";
    case "attempt":
      return `attempt ${e.attempt}: ${e.outcome}${e.startedAt !== undefined ? ` after ${age(e.at - e.startedAt)}` : ""}`;
    case "delay":
      return `delayed until ${time(e.until)}`;
    case "wait":
      return `waits for signal "${e.signalKey}"${e.until ? ` until ${time(e.until)}` : ""}`;
    case "signal":
      return e.outcome === "timed_out"
        ? `signal "${e.signalKey}" timed out`
        : `signal "${e.signalKey}" delivered${e.bytes !== undefined ? ` (${e.bytes} bytes)` : ""}`;
    case "effects":
      return `wrote ${(e.keys ?? []).join(", ")}`;
    case "redrive":
      return `retried from step ${e.step}`;
    case "terminated":
      return e.outcome;
    default:
      return e.kind;
  }
}

function signalForm(key) {
  const area = h("textarea", { rows: 3, name: "payload", placeholder: '{"approved": true}' }, "{}");
  return h(
    "form",
    {
      class: "signal-form",
      onsubmit: async (e) => {
        e.preventDefault();
        if (!confirm(`Send signal "${key}" with this payload?\n\n${area.value}`)) return;
        try {
          const out = await post("/api/signals", { key, json: area.value });
          toast(`signal "${key}" ${out.outcome}`);
          render();
        } catch (err) {
          toast(err.message, true);
        }
      },
    },
    area,
    h("button", { type: "submit", class: "primary" }, "Send signal"),
  );
}

async function action(question, path, body, done) {
  if (!confirm(question)) return;
  try {
    const out = await post(path, body);
    toast(done(out));
    render();
  } catch (err) {
    toast(err.message, true);
  }
}

/** What a repair (its dry run's plan) does to the run, in words. */
function repairWhat(plan) {
  return plan.action === "ended_failed"
    ? "It ends failed, saying it was repaired."
    : plan.action === "end_rewritten"
      ? "Its end record is rewritten: it ended failed."
      : plan.action === "records_rewritten"
        ? "It keeps its end; its damaged records are rewritten from it."
        : "Its listing entry is rewritten; the run is not changed.";
}

/**
 * A button that repairs run `id` through the owner, asking first with what the dry run found (the server words the damage);
 * the repair carries that plan's token, so the owner refuses it when the run no longer gives that plan.
 */
function repairButton(id) {
  const enc = encodeURIComponent(id);
  const repair = async () => {
    try {
      const plan = await post(`/api/runs/${enc}/repair`, { dryRun: true });
      const damage = plan.damaged.map((d) => `its ${d.words} is damaged (${d.detail})`).join("; ");
      // The confirmed plan goes with the repair: a run that changed since the dry run is refused, not repaired by another plan.
      await action(`Repair run ${id}? ${damage}. ${repairWhat(plan)}`, `/api/runs/${enc}/repair`, { plan: plan.plan }, () => `run ${id} repaired`);
    } catch (e) {
      toast(e.message, true);
    }
  };
  return h("button", { class: "danger", "data-action": "repair", "data-run": id, onclick: repair }, "Repair run");
}

/**
 * A button that removes run `id` through the owner (an active run is ended failed first), asking first with what the
 * removal's dry run would take; the removal carries that plan's token, so the owner refuses it when the run no longer
 * gives that plan.
 */
function removeButton(id) {
  const enc = encodeURIComponent(id);
  const remove = async () => {
    try {
      const body = { remove: true, endActive: true };
      const plan = await post(`/api/runs/${enc}/repair`, { ...body, dryRun: true });
      const damage = plan.damaged.map((d) => `its ${d.words} is damaged (${d.detail})`).join("; ");
      const question = `Remove run ${id}? ${damage === "" ? "Its records read" : damage}. The removal takes ${plan.removed.join("; ")}.`;
      // The confirmed plan goes with the removal: a run that changed since the dry run is refused, not removed by another plan.
      await action(question, `/api/runs/${enc}/repair`, { ...body, plan: plan.plan }, () => `run ${id} removed`);
    } catch (e) {
      toast(e.message, true);
    }
  };
  return h("button", { class: "danger", "data-action": "remove", "data-run": id, onclick: remove }, "Remove run");
}

/** A run page that could not load because a record of the run is damaged: the error, and the repair or removal through the owner. */
function damagedRun(id, err) {
  return [
    h("h1", {}, "Could not load this page"),
    h("p", { class: "error", id: "page-error" }, err.message),
    h("div", { class: "toolbar" }, repairButton(id), removeButton(id)),
  ];
}

/** A loaded run's damaged records beside it (its signal wait, group member record, child entries, listing entry), and the repair. */
function runDamage(d) {
  if (!d.damage?.length) return null;
  return h(
    "div",
    { class: "error", id: "run-damage" },
    h("p", {}, `Records of this run are damaged: ${d.damage.map((x) => `its ${x.words} (${x.detail})`).join("; ")}.`),
    h("div", { class: "toolbar" }, repairButton(d.runId), removeButton(d.runId)),
  );
}

/**
 * How far the page checked a parent's children's entries for damage (one
 * read's worth a load, for a parent of more children than that), with a
 * link to check the next ones.
 */
function childChecks(d) {
  const c = d.childEntries;
  if (!c) return null;
  const enc = encodeURIComponent(d.runId);
  const which = c.after === undefined ? "the first" : `those after child ${c.after}`;
  return h(
    "p",
    { class: "muted", id: "child-checks" },
    `Checked ${c.count} of its children's entries for damage (${which})${c.next ? "; more follow" : ""}; taquba runs repair --dry-run checks them all. `,
    c.next ? h("a", { href: `#/run/${enc}?children_after=${encodeURIComponent(c.next)}`, "data-action": "next-children" }, "Check the next ones") : null,
    c.after !== undefined ? h("a", { href: `#/run/${enc}`, "data-action": "first-children" }, " From the first") : null,
  );
}

/** How much of the run's history the page shows (one read's worth a load, for a run of more steps than that), with a link to the next ones. */
function historyPart(d) {
  const p = d.historyPage;
  if (!p) return null;
  const enc = encodeURIComponent(d.runId);
  const which = p.after === undefined ? "the first" : `those after step ${p.after}`;
  return h(
    "p",
    { class: "muted", id: "history-part" },
    `Showing ${p.count} of its steps' history entries (${which})${p.next !== undefined ? "; more follow" : ""}. `,
    p.next !== undefined ? h("a", { href: `#/run/${enc}?history_after=${p.next}`, "data-action": "next-history" }, "The next ones") : null,
    p.after !== undefined ? h("a", { href: `#/run/${enc}`, "data-action": "first-history" }, " From the first") : null,
  );
}

async function run(id, params) {
  let d;
  try {
    const q = new URLSearchParams();
    for (const k of ["children_after", "history_after"]) if (params?.get(k)) q.set(k, params.get(k));
    const qs = q.toString();
    d = await api(`/api/runs/${encodeURIComponent(id)}${qs ? `?${qs}` : ""}`);
  } catch (err) {
    if (err.code === "STORE_CORRUPTED" || err.code === "GROUP_MEMBER_DAMAGED") return damagedRun(id, err);
    throw err;
  }
  const enc = encodeURIComponent(d.runId);
  const buttons = [];
  if (ACTIVE.has(d.state) && d.state !== "cancelling") {
    buttons.push(
      h(
        "button",
        {
          class: "danger",
          "data-action": "cancel",
          onclick: () =>
            action(`Cancel run ${d.runId}?`, `/api/runs/${enc}/cancel`, {}, (o) => (o.cancelled ? "cancellation recorded" : "the run had already ended")),
        },
        "Cancel run",
      ),
    );
  }
  if (d.state === "failed" || d.state === "cancelled") {
    const path = d.kind === "job" ? `/api/jobs/${enc}/retry` : `/api/runs/${enc}/retry`;
    buttons.push(
      h(
        "button",
        {
          class: "primary",
          "data-action": "retry",
          onclick: () => action(`Retry ${d.kind === "job" ? "job" : "run"} ${d.runId} from step ${d.step}?`, path, {}, (o) => `re-opened at step ${o.step}`),
        },
        d.kind === "job" ? "Retry job" : "Retry run",
      ),
    );
  }
  const rows = d.timeline.map((e) =>
    h(
      "tr",
      { "data-kind": e.kind },
      h("td", {}, time(e.at)),
      h("td", {}, e.step === undefined ? "-" : `${e.step}${e.stepName ? ` ${e.stepName}` : ""}`),
      h("td", {}, e.outcome ? stateBadge(e.outcome) : "", " ", timelineText(e)),
      h("td", {}, e.error ? h("div", { class: "error" }, e.error) : null, e.stack ? h("details", {}, h("summary", {}, "stack"), h("pre", {}, e.stack)) : null),
    ),
  );
  const result = d.result ? `${d.result.text ?? `base64:${d.result.base64}`}${d.result.truncated ? " …" : ""} (${d.result.size} bytes)` : undefined;
  return [
    h("h1", {}, "Run ", h("span", { class: "mono", id: "run-id" }, d.runId), " ", stateBadge(d.state)),
    h("div", { class: "toolbar" }, buttons),
    runDamage(d),
    childChecks(d),
    fields([
      ["workflow", d.workflow ? `${d.workflow}${d.kind === "job" ? " (job)" : ""}` : undefined],
      ["step", String(d.step)],
      ["submitted", d.submittedAt ? time(d.submittedAt) : undefined],
      ["ended", d.terminatedAt ? time(d.terminatedAt) : undefined],
      ["waiting on", d.signalWait],
      ["step job", d.stepJob ? stepJobText(d.stepJob) : undefined],
      ["headers", headersText(d.headers)],
      ["group", d.group ? h("a", { href: `#/group/${encodeURIComponent(d.group.id)}` }, `${d.group.id} (member ${d.group.key})`) : undefined],
      ["error", d.error ? h("span", { class: "error" }, `${d.error}${d.errorKind ? ` [${d.errorKind}]` : ""}`) : undefined],
      ["public error", d.publicError],
      ["result", result],
    ]),
    d.signalWait ? [h("h2", {}, `Send signal "${d.signalWait}"`), signalForm(d.signalWait)] : null,
    h("h2", {}, "Timeline"),
    historyPart(d),
    table(["time", "step", "event", "error"], rows),
    d.omitted ? h("p", { class: "muted" }, `history bounded: ${d.omitted.steps} older steps and ${d.omitted.attempts} attempts left out`) : null,
  ];
}

async function waiting() {
  const page = await api("/api/waiting");
  const rows = page.runs.map((r) =>
    h(
      "tr",
      { "data-row": r.runId },
      h("td", {}, runLink(r.runId)),
      h("td", {}, r.workflow ?? "-"),
      h("td", { class: "mono" }, r.signal?.key ?? "-"),
      h("td", {}, r.signal ? time(r.signal.deadlineMs) : "-"),
      h("td", {}, r.signal ? signalForm(r.signal.key) : null),
    ),
  );
  return [
    h("h1", {}, "Waiting for a signal"),
    table(["run", "workflow", "signal key", "deadline", "send"], rows),
    unreadableList(page.unreadable, "runs", (u) => u.runId),
  ];
}

async function dead(params) {
  const after = params.get("after") ?? "";
  const shard = params.get("shard") ?? "";
  const q = new URLSearchParams();
  if (after) q.set("after", after);
  if (shard) q.set("shard", shard);
  const { shards } = await api(`/api/dead?${q}`);
  const sharded = shards.some((s) => s.shard !== null);
  const rows = shards.flatMap((s) =>
    s.items.map((j) =>
      h(
        "tr",
        { "data-job": j.id, "data-shard": s.shard ?? "" },
        sharded ? h("td", { class: "num" }, String(s.shard)) : null,
        h("td", { class: "mono" }, j.id),
        h("td", { class: "mono" }, j.queue),
        h("td", {}, j.runId ? runLink(j.runId) : "-"),
        h("td", { class: "num" }, `${j.attempt}/${j.maxAttempts}`),
        h("td", { class: "num" }, String(j.requeues ?? 0)),
        h("td", {}, time(j.failedAt)),
        h("td", { class: "error" }, j.lastError ?? ""),
        h(
          "td",
          {},
          h(
            "button",
            {
              "data-action": "redrive",
              onclick: () =>
                action(
                  j.runId
                    ? `Redrive dead job ${j.id}? Its run ${j.runId} is re-opened at step ${j.step ?? "?"}.`
                    : `Requeue dead job ${j.id} of queue ${j.queue} with fresh attempts?`,
                  `/api/dead/${encodeURIComponent(j.id)}/redrive`,
                  { shard: s.shard },
                  (o) => (o.kind === "run" ? `run ${o.runId} re-opened at step ${o.step}` : `job ${o.jobId} requeued`),
                ),
            },
            "Redrive",
          ),
        ),
      ),
    ),
  );
  const more = shards
    .filter((s) => s.next)
    .map((s) => {
      const p = new URLSearchParams({ after: s.next });
      if (s.shard !== null) p.set("shard", String(s.shard));
      return h("button", { onclick: () => (location.hash = `#/dead?${p}`) }, s.shard === null ? "Next page" : `Next page of shard ${s.shard}`);
    });
  const head = ["job", "queue", "run", "attempts", "requeues", "failed", "last error", ""];
  return [
    h("h1", {}, shard ? `Dead letters of shard ${shard}` : "Dead letters"),
    table(sharded ? ["shard", ...head] : head, rows, sharded ? [0, 4, 5] : [3, 4]),
    h("div", { class: "toolbar" }, shard ? h("button", { onclick: () => (location.hash = "#/dead") }, "Every shard") : null, more),
  ];
}

async function groups() {
  const page = await api("/api/groups");
  const rows = page.groups.map((g) =>
    h(
      "tr",
      { "data-group": g.groupId },
      h("td", {}, h("a", { href: `#/group/${encodeURIComponent(g.groupId)}`, class: "mono" }, g.groupId)),
      h("td", {}, time(g.createdAtMs)),
      ...["total", "active", "succeeded", "failed", "cancelled"].map((k) => h("td", { class: "num" }, String(g.members[k]))),
    ),
  );
  return [
    h("h1", {}, "Run groups"),
    table(["group", "created", "members", "active", "succeeded", "failed", "cancelled"], rows, [2, 3, 4, 5, 6]),
    unreadableList(
      page.unreadable,
      "groups",
      (u) => u.groupId,
      // A damaged member's run: repaired (it ends failed) or removed, as on its own page, each with its confirmed plan.
      (u) => (u.damage?.record === "member" && u.damage.runId ? [repairButton(u.damage.runId), " ", removeButton(u.damage.runId)] : null),
    ),
  ];
}

async function group(id) {
  const g = await api(`/api/groups/${encodeURIComponent(id)}`);
  const c = g.counts;
  const rows = g.members.map((m) =>
    h(
      "tr",
      { "data-member": m.key },
      h("td", { class: "mono" }, m.key),
      h("td", {}, runLink(m.runId)),
      h("td", {}, stateBadge(m.state)),
      h("td", {}, time(m.terminatedAt)),
      h("td", { class: "error" }, m.error ?? ""),
    ),
  );
  return [
    h("h1", {}, "Group ", h("span", { class: "mono" }, g.groupId)),
    h(
      "div",
      { class: "cards" },
      ["total", "succeeded", "failed", "cancelled", "running", "pending", "unsubmitted"].map((k) =>
        h("div", { class: "card", "data-card": k }, h("div", { class: "value" }, String(c[k])), h("div", { class: "label" }, k)),
      ),
    ),
    table(["member", "run", "state", "ended", "error"], rows),
    g.membersTruncated ? h("p", { class: "muted" }, `first ${g.members.length} of ${c.total} members`) : null,
  ];
}

// ---- routing and live refresh ----------------------------------------------

function route() {
  const raw = location.hash.replace(/^#/, "") || "/";
  const [path, query] = raw.split("?");
  const params = new URLSearchParams(query ?? "");
  const parts = path.split("/").filter(Boolean);
  if (parts[0] === "runs") return ["runs", () => runs(params)];
  if (parts[0] === "run" && parts[1]) return ["runs", () => run(decodeURIComponent(parts[1]), params)];
  if (parts[0] === "waiting") return ["waiting", waiting];
  if (parts[0] === "dead") return ["dead", () => dead(params)];
  if (parts[0] === "groups") return ["groups", groups];
  if (parts[0] === "owners") return ["owners", owners];
  if (parts[0] === "group" && parts[1]) return ["groups", () => group(decodeURIComponent(parts[1]))];
  return ["overview", overview];
}

let generation = 0;

async function render() {
  const mine = ++generation;
  const [nav, page] = route();
  for (const a of document.querySelectorAll("[data-nav]")) a.classList.toggle("active", a.dataset.nav === nav);
  let content;
  try {
    content = await page();
  } catch (err) {
    content = [h("h1", {}, err.status === 404 ? "Not found" : "Could not load this page"), h("p", { class: "error", id: "page-error" }, err.message)];
  }
  // A later navigation or refresh won: drop this stale rendering.
  if (mine !== generation) return;
  // Keep what the user is typing (a signal payload) across a live refresh.
  if (document.activeElement && main.contains(document.activeElement) && document.activeElement.tagName === "TEXTAREA") return;
  const next = document.createElement("div");
  next.append(...[content].flat(3).filter(Boolean));
  // Unchanged page: keep the nodes (an open stack, a button under the pointer) as they are.
  if (main.dataset.route === location.hash && next.innerHTML === main.innerHTML) return;
  main.replaceChildren(...next.childNodes);
  main.dataset.route = location.hash;
  main.dataset.rendered = String(mine);
}

let events;
let eventsForOwners;

/** Opens the event stream; on the owners page it also reports lease renewals and owner changes. */
function connect() {
  const live = document.getElementById("live");
  const forOwners = route()[0] === "owners";
  if (events !== undefined && eventsForOwners === forOwners) return;
  events?.close();
  eventsForOwners = forOwners;
  const params = new URLSearchParams();
  if (token !== null) params.set("token", token);
  if (forOwners) params.set("owners", "1");
  const query = params.toString();
  events = new EventSource(`/api/events${query === "" ? "" : `?${query}`}`);
  events.addEventListener("open", () => {
    live.textContent = "live";
    live.classList.add("on");
  });
  events.addEventListener("change", () => {
    live.textContent = `live, updated ${new Date().toLocaleTimeString()}`;
    render();
  });
  events.addEventListener("problem", (e) => {
    live.textContent = `store unreachable: ${JSON.parse(e.data)}`;
    live.classList.remove("on");
  });
  events.addEventListener("error", () => {
    live.textContent = "reconnecting";
    live.classList.remove("on");
  });
}

api("/api/info")
  .then((info) => {
    document.getElementById("store").textContent = `${info.name}${info.shards === null ? "" : ` (${info.shards} shards)`} · ${info.stepQueue} · ${info.store}`;
  })
  .catch(() => undefined);
window.addEventListener("hashchange", () => {
  connect();
  render();
});
render();
connect();
