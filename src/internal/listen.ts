/**
 * What binding a port shares, whichever server binds it: the error that
 * names the address, and how an address is written in a URL.
 *
 * @internal
 */
import * as HttpServerError from "@effect/platform/HttpServerError"
import * as Predicate from "effect/Predicate"

/** @internal */
export const bracketed = (hostname: string): string => hostname.includes(":") ? `[${hostname}]` : hostname

/** The host a URL gives for a bound address: a wildcard address is reached on loopback. @internal */
export const hostForUrl = (hostname: string): string =>
  hostname === "0.0.0.0" || hostname === "::" ? "127.0.0.1" : bracketed(hostname)

// Node's error says so by its code; grpc-js's, which gathers those of every address it tried, only in its text.
const inUse = (cause: unknown): boolean =>
  (Predicate.hasProperty(cause, "code") && cause.code === "EADDRINUSE") ||
  (cause instanceof Error && cause.message.includes("EADDRINUSE"))

/**
 * The platform's ServeError has no message of its own, only Node's error as its cause.
 *
 * @internal
 */
export class ListenError extends HttpServerError.ServeError {
  constructor(cause: unknown, address: string) {
    super({ cause })
    this.message = inUse(cause)
      ? `address ${address} is in use`
      : `cannot listen on ${address}: ${cause instanceof Error ? cause.message : String(cause)}`
  }
}
