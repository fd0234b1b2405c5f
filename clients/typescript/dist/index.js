import { readMessages } from "./sse.js";
export { readMessages } from "./sse.js";
/**
 * Every failure of a call: an error answer of the server, or none.
 * `status` is the HTTP status (0 when the server could not be reached),
 * `code` the machine-readable code (`conflict`, `already_decided`,
 * `not_found`, `invalid_arguments`, …; `unreachable` with status 0) and
 * `message` what went wrong and how to fix it. `body` is the whole error
 * answer: a spent continuation's 409 carries the earlier `result`.
 */
export class CairnError extends Error {
    status;
    code;
    body;
    constructor(status, code, message, body) {
        super(message);
        this.name = "CairnError";
        this.status = status;
        this.code = code;
        this.body = body;
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
    constructor(options = {}) {
        this.baseUrl = (options.baseUrl ?? "http://localhost:8080").replace(/\/+$/, "");
        this.token = options.token;
        this.fetcher = options.fetch ?? globalThis.fetch.bind(globalThis);
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
                    const ev = JSON.parse(msg.data);
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
                if (options.reconnect === false || failures >= 5)
                    throw err;
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
        for await (const msg of readMessages(resp.body)) {
            if (msg.event === "session")
                yield { type: "session", session: withIds(JSON.parse(msg.data)) };
            else if (msg.event === "resync")
                yield { type: "resync" };
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
        let resp;
        try {
            resp = await this.fetcher(url, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body), signal });
        }
        catch (err) {
            if (signal?.aborted)
                throw err;
            throw new CairnError(0, "unreachable", `${method} ${url}: ${err.cause ?? err.message}`);
        }
        if (!resp.ok)
            throw await errorFrom(resp);
        return resp;
    }
    async call(method, path, body, options, auth = true) {
        const resp = await this.open(method, path, body, {}, options.signal, auth);
        const text = await resp.text();
        return (text ? JSON.parse(text) : {});
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
async function errorFrom(resp) {
    const text = await resp.text();
    try {
        const body = JSON.parse(text);
        if (body && typeof body.error === "object") {
            return new CairnError(resp.status, String(body.error.code ?? ""), String(body.error.message ?? ""), body);
        }
    }
    catch {
        // not JSON: below
    }
    return new CairnError(resp.status, "http_error", text.trim() || `HTTP ${resp.status}`);
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
