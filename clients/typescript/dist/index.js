import { readMessages } from "./sse.js";
export { readMessages } from "./sse.js";
/**
 * Every failure of a call: an error answer of the server, or none.
 * `status` is the HTTP status (0 when no answer came), `code` the
 * machine-readable code (`conflict`, `already_decided`, `not_found`,
 * `invalid_arguments`, `session_busy`, `stopping`, `gone`, …; with status
 * 0: `unreachable` when the server could not be reached, `timeout` when it
 * did not answer within the client's `timeoutMs`, `connection` when the
 * connection broke mid-answer; `invalid_response` for an answer that is not
 * the JSON the API sends, its start in `message`) and `message` what went
 * wrong and how to fix it. `body` is the whole error answer: a spent
 * continuation's 409 carries the earlier `result`. `retryAfter` is the
 * server's Retry-After in seconds (a 503: nothing was recorded, send it
 * again). A request the caller aborts (its `signal`) rejects with the
 * abort's reason, as `fetch` does.
 */
export class CairnError extends Error {
    status;
    code;
    body;
    retryAfter;
    constructor(status, code, message, body, retryAfter) {
        super(message);
        this.name = "CairnError";
        this.status = status;
        this.code = code;
        this.body = body;
        this.retryAfter = retryAfter;
    }
    /** The answer of the resume that spent a continuation (on its 409), if any. */
    get result() {
        const r = this.body?.result;
        return r ?? undefined;
    }
}
/** A client of one Cairn server. */
export class Client {
    baseUrl;
    token;
    fetcher;
    timeoutMs;
    retries;
    retryBackoffMs;
    constructor(options = {}) {
        this.baseUrl = (options.baseUrl ?? "http://localhost:8080").replace(/\/+$/, "");
        this.token = options.token;
        this.fetcher = options.fetch ?? globalThis.fetch.bind(globalThis);
        this.timeoutMs = options.timeoutMs;
        this.retries = options.retries ?? 0;
        this.retryBackoffMs = options.retryBackoffMs ?? 500;
    }
    // Sessions
    /**
     * Starts a session with the user's first message. Answers after the first
     * turn ends or pauses, or at once (status `running`) with `wait: false`.
     */
    async createSession(agent, input, options = {}) {
        const body = { agent, input };
        if (options.metadata)
            body.metadata = options.metadata;
        if (options.wait === false)
            body.wait = false;
        return withIds(await this.call("POST", "/v1/sessions", body, options));
    }
    /** Reads a session, every value whole. */
    async getSession(id, options = {}) {
        return withIds(await this.call("GET", `/v1/sessions/${enc(id)}`, undefined, options));
    }
    /** One page of sessions, most recently updated first; `status` and `agent` keep those only. */
    async listSessions(query = {}, options = {}) {
        const page = await this.call("GET", "/v1/sessions" + qs(query), undefined, options);
        page.sessions = (page.sessions ?? []).map(withIds);
        return page;
    }
    /** Every session (of that status, of that agent), walking the pages. */
    async *sessions(query = {}) {
        let cursor;
        do {
            const page = await this.listSessions({ status: query.status, agent: query.agent, limit: query.pageSize, cursor });
            yield* page.sessions;
            cursor = page.next_cursor ?? undefined;
        } while (cursor);
    }
    /** Sends the user's next message to the top of the session's stack; answers after the turn. */
    async sendMessage(id, text, seq, options = {}) {
        const body = { text };
        if (seq !== undefined)
            body.seq = seq;
        return withIds(await this.call("POST", `/v1/sessions/${enc(id)}/messages`, body, options));
    }
    /** Cancels the turn (`all`) or pops the top interactive agent (`top`). */
    async cancel(id, scope = "all", options = {}) {
        return withIds(await this.call("POST", `/v1/sessions/${enc(id)}/cancel`, { scope }, options));
    }
    // Decisions
    /**
     * Answers interrupts of a paused session; answers after the resumed turn.
     * `seq` is the session's seq when you decided: if the session moved on,
     * nothing changes and a CairnError 409 `conflict` is thrown
     * (`already_decided` names who decided first).
     */
    async decide(id, seq, decisions, options = {}) {
        return withIds(await this.call("POST", `/v1/sessions/${enc(id)}/decisions`, { seq, decisions }, options));
    }
    /** Approves an interrupt's call, with replacement `arguments` if given (checked against the tool's schema). */
    approve(interrupt, options = {}) {
        return this.decideOne(interrupt, { action: "approve", arguments: options.arguments, remember: options.remember }, options);
    }
    /** Rejects an interrupt's call, or sends a reviewed answer back; the model sees `reason`. */
    reject(interrupt, reason = "", options = {}) {
        return this.decideOne(interrupt, { action: "reject", reason, remember: options.remember }, options);
    }
    /** Answers a question (an `input` interrupt). */
    answer(interrupt, text, options = {}) {
        return this.decideOne(interrupt, { action: "answer", text }, options);
    }
    /** Replaces a reviewed answer; it must fit the agent's output schema. */
    edit(interrupt, output, options = {}) {
        return this.decideOne(interrupt, { action: "edit", output }, options);
    }
    /** Completes an `external` or `client` call with its result (checked against its result schema). */
    complete(interrupt, output, options = {}) {
        return this.decideOne(interrupt, { action: "complete", output }, options);
    }
    /** Fails an `external` or `client` call; the model sees `reason`. */
    fail(interrupt, reason, options = {}) {
        return this.decideOne(interrupt, { action: "fail", reason }, options);
    }
    /**
     * Makes one of the interrupt's choices (`interrupt.ask.choices`), whatever
     * its kind: `value` is what the choice's `field` takes (a reason, a text
     * answer, edited arguments, an answer object, an output); leave it out
     * for a choice that takes nothing. A choice the interrupt does not offer
     * throws a TypeError naming those it does, and sends nothing.
     */
    choose(interrupt, action, value, options = {}) {
        const offered = interrupt.ask?.choices ?? [];
        const choice = offered.find((c) => c.action === action);
        if (!choice) {
            const names = offered.map((c) => c.action).join(", ") || "no decision (reply with sendMessage)";
            throw new TypeError(`${interrupt.kind} ${interrupt.id} takes ${names}, not ${JSON.stringify(action)}`);
        }
        const d = { action };
        if (value !== undefined) {
            if (!choice.field)
                throw new TypeError(`${action} takes nothing more; leave value out`);
            d[choice.field] = value;
        }
        else if (choice.field && !choice.optional) {
            throw new TypeError(`${action} needs its ${choice.field}`);
        }
        return this.decideOne(interrupt, d, options);
    }
    decideOne(interrupt, d, options) {
        if (!interrupt.session_id) {
            throw new TypeError("the interrupt names no session: decide it with decide(sessionId, seq, [...])");
        }
        return this.decide(interrupt.session_id, interrupt.seq, [compact({ interrupt_id: interrupt.id, ...d })], options);
    }
    // The inbox
    /** One page of pending interrupts across sessions; `kind` keeps those kinds only. */
    async listInterrupts(query = {}, options = {}) {
        const kind = Array.isArray(query.kind) ? query.kind.join(",") : query.kind;
        const page = await this.call("GET", "/v1/interrupts" + qs({ status: "pending", kind, limit: query.limit, cursor: query.cursor }), undefined, options);
        page.interrupts ??= [];
        return page;
    }
    /** Every pending interrupt, walking the pages. */
    async *pending(query = {}) {
        let cursor;
        do {
            const page = await this.listInterrupts({ kind: query.kind, limit: query.pageSize, cursor });
            yield* page.interrupts;
            cursor = page.next_cursor ?? undefined;
        } while (cursor);
    }
    // Events
    /** The session's stored events with a seq greater than `after`. */
    async events(id, after = 0, options = {}) {
        const body = await this.call("GET", `/v1/sessions/${enc(id)}/events` + qs({ after: after || undefined }), undefined, options);
        return body.events ?? [];
    }
    /**
     * Follows the session's events live: the stored ones after `after`, then
     * each as it is recorded. It never ends on its own (a session can always
     * go on): break out of the loop, or abort `signal`. When the stream ends
     * (the server's idle timeout, a restart, a dropped connection) it
     * reconnects with `Last-Event-ID`, so no stored event is missed or
     * repeated; `reconnect: false` ends the iteration instead.
     */
    async *follow(id, options = {}) {
        let last = options.after ?? 0;
        let failures = 0;
        for (;;) {
            const headers = { Accept: "text/event-stream" };
            if (last)
                headers["Last-Event-ID"] = String(last);
            try {
                const resp = await this.open("GET", `/v1/sessions/${enc(id)}/events`, undefined, headers, options.signal);
                failures = 0;
                for await (const msg of readMessages(resp.body)) {
                    const ev = decode(msg.data, "an event");
                    if (msg.id !== undefined)
                        last = Number(msg.id);
                    yield ev;
                }
            }
            catch (err) {
                // Reconnect only when the connection failed, never on an error answer.
                if (options.signal?.aborted)
                    throw err;
                if (err instanceof CairnError && err.status !== 0)
                    throw err;
                if (options.reconnect === false || failures >= 5) {
                    throw err instanceof CairnError ? err : noAnswer("GET", this.baseUrl + `/v1/sessions/${enc(id)}/events`, err, options.signal, "connection");
                }
                failures++;
                await new Promise((r) => setTimeout(r, 100 * 2 ** failures));
                continue;
            }
            if (options.reconnect === false)
                return;
        }
    }
    /**
     * Follows every session (GET /v1/events): a `session` change each time
     * one's status or pending interrupts may have changed, `resync` when
     * changes may have been missed. Open it first, then read the listings.
     * It ends when the server closes the stream.
     */
    async *changes(options = {}) {
        const resp = await this.open("GET", "/v1/events", undefined, { Accept: "text/event-stream" }, options.signal);
        try {
            for await (const msg of readMessages(resp.body)) {
                if (msg.event === "session")
                    yield { type: "session", session: withIds(decode(msg.data, "a change")) };
                else if (msg.event === "resync")
                    yield { type: "resync" };
            }
        }
        catch (err) {
            throw err instanceof CairnError ? err : noAnswer("GET", this.baseUrl + "/v1/events", err, options.signal, "connection");
        }
    }
    // Agents, stateless runs, callbacks
    /** The configured agents and their tools. */
    async agents(options = {}) {
        return (await this.call("GET", "/v1/agents", undefined, options)).agents ?? [];
    }
    /**
     * Runs a turn with nothing kept on the server: start with `input`; resume
     * a paused result with its `continuation` and `decisions` (once).
     */
    invoke(agent, body, options = {}) {
        return this.call("POST", `/v1/agents/${enc(agent)}/invoke`, body, options);
    }
    /**
     * Completes a waiting call through the signed URL its tool was given
     * (CAIRN_CALLBACK_URL), with an output or an error text. The URL is the
     * credential: no token is sent.
     */
    callback(url, result, options = {}) {
        return this.call("POST", url, result, options, false);
    }
    /** Who the server takes this client's token to be. */
    me(options = {}) {
        return this.call("GET", "/v1/me", undefined, options);
    }
    /** The server's status ("ok"). */
    async health(options = {}) {
        return (await this.call("GET", "/healthz", undefined, options)).status;
    }
    // Plumbing
    async open(method, path, body, headers, signal, auth = true) {
        const url = /^https?:\/\//.test(path) ? path : this.baseUrl + path;
        const h = { Accept: "application/json", ...headers };
        if (body !== undefined)
            h["Content-Type"] = "application/json";
        if (auth && this.token)
            h.Authorization = `Bearer ${this.token}`;
        for (let attempt = 0;; attempt++) {
            let resp;
            try {
                resp = await this.fetcher(url, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body), signal });
            }
            catch (err) {
                throw noAnswer(method, url, err, signal, "unreachable");
            }
            if (resp.ok)
                return resp;
            const failure = await errorFrom(resp, method, url, signal);
            if (failure.status !== 503 || attempt >= this.retries)
                throw failure;
            const wait = failure.retryAfter !== undefined ? failure.retryAfter * 1000 : this.retryBackoffMs * 2 ** attempt;
            await sleep(Math.min(wait, 30_000), signal);
        }
    }
    async call(method, path, body, options, auth = true) {
        let signal = options.signal;
        if (this.timeoutMs !== undefined) {
            const timeout = AbortSignal.timeout(this.timeoutMs);
            signal = signal ? AbortSignal.any([signal, timeout]) : timeout;
        }
        const resp = await this.open(method, path, body, {}, signal, auth);
        const url = resp.url || path;
        let text;
        try {
            text = await resp.text();
        }
        catch (err) {
            throw noAnswer(method, url, err, signal, "connection");
        }
        if (!text)
            return {};
        try {
            return JSON.parse(text);
        }
        catch {
            throw new CairnError(resp.status, "invalid_response", `${method} ${url}: the answer is not JSON: ${excerpt(text)}`);
        }
    }
}
/** Fills in session_id and seq on a session's interrupts. */
function withIds(s) {
    const list = (s.interrupts ?? []).map((i) => ({
        ...i,
        session_id: i.session_id || s.id,
        seq: i.seq || s.seq,
    }));
    return { ...s, interrupts: list };
}
async function errorFrom(resp, method, url, signal) {
    const retryAfter = parseRetryAfter(resp.headers.get("Retry-After"));
    let text;
    try {
        text = await resp.text();
    }
    catch (err) {
        throw noAnswer(method, url, err, signal, "connection");
    }
    try {
        const body = JSON.parse(text);
        if (body && typeof body.error === "object") {
            return new CairnError(resp.status, String(body.error.code ?? ""), String(body.error.message ?? ""), body, retryAfter);
        }
    }
    catch {
        // not JSON: below
    }
    return new CairnError(resp.status, "http_error", excerpt(text) || `HTTP ${resp.status}`, undefined, retryAfter);
}
/**
 * The error of a request that got no (whole) answer: the caller's own
 * abort as it is; the client's timeout as `timeout`; otherwise `code`.
 */
function noAnswer(method, url, err, signal, code) {
    const timedOut = (e) => e instanceof Error && e.name === "TimeoutError";
    if (signal?.aborted) {
        if (!timedOut(signal.reason))
            return signal.reason ?? err;
        return new CairnError(0, "timeout", `${method} ${url}: no answer in time`);
    }
    if (timedOut(err))
        return new CairnError(0, "timeout", `${method} ${url}: no answer in time`);
    const e = err;
    return new CairnError(0, code, `${method} ${url}: ${e?.cause ?? e?.message ?? String(err)}`);
}
/** A stream message's JSON; `invalid_response` when it is not JSON. */
function decode(data, what) {
    try {
        return JSON.parse(data);
    }
    catch {
        throw new CairnError(0, "invalid_response", `${what} in the stream is not JSON: ${excerpt(data)}`);
    }
}
/** Retry-After in seconds (seconds, or an HTTP date); undefined when absent. */
function parseRetryAfter(value) {
    if (!value)
        return undefined;
    const n = Number(value);
    if (Number.isFinite(n))
        return Math.max(0, n);
    const at = Date.parse(value);
    return Number.isNaN(at) ? undefined : Math.max(0, (at - Date.now()) / 1000);
}
/** The start of an answer's body, for an error message. */
function excerpt(text, limit = 200) {
    const t = text.trim();
    return t.length <= limit ? t : t.slice(0, limit) + "…";
}
function sleep(ms, signal) {
    return new Promise((resolve, reject) => {
        const timer = setTimeout(resolve, ms);
        signal?.addEventListener("abort", () => {
            clearTimeout(timer);
            reject(signal.reason);
        }, { once: true });
    });
}
function enc(part) {
    return encodeURIComponent(part);
}
function qs(params) {
    const kept = Object.entries(params).filter(([, v]) => v !== undefined && v !== "");
    return kept.length ? "?" + new URLSearchParams(kept.map(([k, v]) => [k, String(v)])).toString() : "";
}
function compact(o) {
    return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== ""));
}
