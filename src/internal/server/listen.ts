/**
 * What binding a port shares, whichever server binds it: the error that
 * names the address, and how an address is written in a URL.
 *
 * @internal
 */
import * as HttpServerError from "@effect/platform/HttpServerError"
import { Predicate } from "effect"

/** @internal */
export const bracketed = (hostname: string): string => hostname.includes(":") ? `[${hostname}]` : hostname

/** The host a URL gives for a bound address: a wildcard address is reached on loopback. @internal */
export const hostForUrl = (hostname: string): string =>
  hostname === "0.0.0.0" || hostname === "::" ? "127.0.0.1" : bracketed(hostname)

/**
 * The platform's ServeError has no message of its own, only Node's error as its cause.
 *
 * @internal
 */
export class ListenError extends HttpServerError.ServeError {
  constructor(cause: unknown, address: string) {
    super({ cause })
    this.message = Predicate.hasProperty(cause, "code") && cause.code === "EADDRINUSE"
      ? `address ${address} is in use`
      : `cannot listen on ${address}: ${cause instanceof Error ? cause.message : String(cause)}`
  }
}
