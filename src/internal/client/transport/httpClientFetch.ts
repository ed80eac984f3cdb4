/**
 * A `fetch` over the user's `HttpClient`, for the SDK's transports and card
 * resolver, so that the user's middleware, proxy, auth and test clients
 * carry the agent's requests. Its failures are shaped as fetch's own, so
 * that classification reads the same facts on both paths.
 *
 * @internal
 */
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as HttpBody from "@effect/platform/HttpBody"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientError from "@effect/platform/HttpClientError"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Runtime from "effect/Runtime"
import * as Stream from "effect/Stream"
import { RequestNotSent } from "../call/classify.js"

const abortReason = (signal: AbortSignal): unknown =>
  signal.reason ?? new DOMException("This operation was aborted", "AbortError")

/** What the failed request effect throws, as close to fetch's own rejection as the cause allows. */
const rejection = (cause: Cause.Cause<unknown>): unknown => {
  const failure = Cause.failureOption(cause)
  if (Option.isNone(failure)) return Cause.squash(cause)
  const error = failure.value
  if (HttpClientError.isHttpClientError(error) && error._tag === "RequestError") {
    // The transport's own error (fetch's TypeError with ECONNREFUSED below it, a socket error) says whether
    // the request left; one without a cause proves nothing, and stays the client's error, read as unknown.
    if (error.reason === "Transport") return error.cause ?? error
    return new RequestNotSent(error.message, error.cause)
  }
  return error
}

/** The web `Response` of `response`, its body streamed as it arrives (an event stream stays a stream). */
const toWeb = (
  response: HttpClientResponse.HttpClientResponse,
  runtime: Runtime.Runtime<never>,
  signal: AbortSignal | null | undefined
): Response => {
  const status = response.status
  const headers = new Headers(response.headers)
  if (status === 204 || status === 205 || status === 304 || status < 200) return new Response(null, { status, headers })
  const body = response.stream.pipe(
    // The stream's error is the client's wrapper; the socket's error below it is what fetch would have thrown.
    Stream.mapError((error) => error.cause ?? error),
    Stream.toReadableStreamRuntime(runtime)
  )
  return new Response(signal ? abortable(body, signal) : body, { status, headers })
}

/**
 * `body` failing with the signal's reason once it aborts, as a fetch body
 * does when the call's time is up or it is interrupted; the client's stream
 * below is cancelled. Read through its reader rather than with
 * `Stream.interruptWhen` or a `TransformStream`, each of which costs more
 * than the rest of the adaptation.
 */
const abortable = (body: ReadableStream<Uint8Array>, signal: AbortSignal): ReadableStream<Uint8Array> => {
  const reader = body.getReader()
  let onAbort = () => {}
  const release = () => signal.removeEventListener("abort", onAbort)
  return new ReadableStream<Uint8Array>({
    start(controller) {
      onAbort = () => {
        controller.error(abortReason(signal))
        reader.cancel().catch(() => undefined)
      }
      if (signal.aborted) return onAbort()
      signal.addEventListener("abort", onAbort, { once: true })
    },
    pull(controller) {
      return reader.read().then(
        (chunk) => {
          if (signal.aborted) return
          if (chunk.done) {
            release()
            controller.close()
          } else controller.enqueue(chunk.value)
        },
        (error: unknown) => {
          release()
          if (!signal.aborted) controller.error(error)
        }
      )
    },
    cancel(reason) {
      release()
      return reader.cancel(reason)
    }
  })
}

const urlOf = (input: Parameters<typeof fetch>[0]): string =>
  typeof input === "string" ? input : input instanceof URL ? input.href : input.url

const requestOf = (
  input: Parameters<typeof fetch>[0],
  init: RequestInit | undefined
): HttpClientRequest.HttpClientRequest => {
  const method = (init?.method ?? (input instanceof Request ? input.method : "GET"))
    .toUpperCase() as HttpClientRequest.HttpClientRequest["method"]
  const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined))
  const record: Record<string, string> = {}
  headers.forEach((value, name) => (record[name] = value))
  const request = HttpClientRequest.make(method)(urlOf(input), { headers: record })
  const body = init?.body
  if (body === undefined || body === null) return request
  const contentType = headers.get("content-type") ?? undefined
  if (typeof body === "string") return HttpClientRequest.setBody(request, HttpBody.text(body, contentType))
  if (body instanceof Uint8Array) return HttpClientRequest.setBody(request, HttpBody.uint8Array(body, contentType))
  // The SDK sends only text; anything else is handed over as it is, for the client to encode or refuse.
  return HttpClientRequest.setBody(request, HttpBody.raw(body, { contentType }))
}

/**
 * `client` as the `fetch` the SDK takes, run on `runtime` (the context
 * `RemoteAgent.make` ran in). A request asking not to follow redirects
 * (`redirect: "error"` or `"manual"`) runs with `FetchHttpClient.RequestInit`
 * `redirect: "manual"`, so that `FetchHttpClient` answers a redirect with the
 * 3xx itself; a client that follows redirects on its own decides for itself.
 * The client's own span is off for these requests: the call's span is the
 * client span, and its `traceparent` must reach the server unchanged.
 */
export const make = (client: HttpClient.HttpClient, runtime: Runtime.Runtime<never>): typeof fetch => {
  const runExit = Runtime.runPromiseExit(runtime)
  const requestInit = Context.getOption(runtime.context, FetchHttpClient.RequestInit)
  const manual: RequestInit = { ...Option.getOrElse(requestInit, () => ({})), redirect: "manual" }
  const quiet = client.pipe(HttpClient.withTracerDisabledWhen(() => true), HttpClient.withTracerPropagation(false))
  const execute = (request: HttpClientRequest.HttpClientRequest, noRedirect: boolean) => {
    const effect = quiet.execute(request)
    return noRedirect ? Effect.provideService(effect, FetchHttpClient.RequestInit, manual) : effect
  }
  return async (input, init) => {
    const signal = init?.signal
    if (signal?.aborted) throw abortReason(signal)
    let request: HttpClientRequest.HttpClientRequest
    try {
      request = requestOf(input, init)
    } catch (error) {
      throw new RequestNotSent(String(error), error)
    }
    const noRedirect = init?.redirect === "error" || init?.redirect === "manual"
    const exit = await runExit(execute(request, noRedirect), signal ? { signal } : undefined)
    if (Exit.isSuccess(exit)) return toWeb(exit.value, runtime, signal)
    // Interrupted by the signal: rejected with its reason, as fetch is.
    if (signal?.aborted) throw abortReason(signal)
    const failure = Cause.failureOption(exit.cause)
    // A client that fails on an error status (`HttpClient.filterStatusOk`) still got an answer: the SDK reads it.
    if (
      Option.isSome(failure) && HttpClientError.isHttpClientError(failure.value) &&
      failure.value._tag === "ResponseError" && failure.value.reason === "StatusCode"
    ) return toWeb(failure.value.response, runtime, signal)
    throw rejection(exit.cause)
  }
}
