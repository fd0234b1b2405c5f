/** One dispatched Server-Sent Events message. */
export interface SSEMessage {
    /** The event type; "message" when the stream named none. */
    event: string;
    data: string;
    /** The id the message set, if it set one (Cairn: the event's seq). */
    id?: string;
}
/**
 * Reads the messages of an event stream (the WHATWG event-stream format)
 * until it ends. Comment lines (keep-alives) are skipped, and a message
 * without data is not dispatched. Stopping the iteration cancels the body.
 */
export declare function readMessages(body: ReadableStream<Uint8Array>): AsyncGenerator<SSEMessage>;
