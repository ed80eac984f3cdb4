/**
 * The error table against the text of A2A 1.0.1: §5.4's mapping table, as
 * the specification prints it, and §9.5's standard JSON-RPC codes; and how
 * a reason finds its row.
 */
import {
  A2AError,
  ContentTypeNotSupportedError,
  ERROR_INFO_TYPE,
  ExtendedAgentCardNotConfiguredError,
  ExtensionSupportRequiredError,
  InvalidAgentResponseError,
  PushNotificationNotSupportedError,
  RequestMalformedError,
  TaskNotCancelableError,
  TaskNotFoundError,
  toJsonRpcError,
  UnsupportedOperationError,
  VersionNotSupportedError
} from "@a2a-js/sdk/errors"
import { describe, expect, it } from "@effect/vitest"
import * as A2AClientError from "../../../src/A2AClientError.js"
import * as ErrorTable from "../../../src/internal/wire/errorTable.js"

// A2A 1.0.1 (tag v1.0.1, docs/specification.md), §5.4 "Error Code Mappings", as printed.
const section54 = `
| A2A Error Type                        | JSON-RPC Code | gRPC Status           | HTTP Status                 |
| :------------------------------------ | :------------ | :-------------------- | :-------------------------- |
| \`TaskNotFoundError\`                   | \`-32001\`      | \`NOT_FOUND\`           | \`404 Not Found\`             |
| \`TaskNotCancelableError\`              | \`-32002\`      | \`FAILED_PRECONDITION\` | \`400 Bad Request\`           |
| \`PushNotificationNotSupportedError\`   | \`-32003\`      | \`FAILED_PRECONDITION\` | \`400 Bad Request\`           |
| \`UnsupportedOperationError\`           | \`-32004\`      | \`FAILED_PRECONDITION\` | \`400 Bad Request\`           |
| \`ContentTypeNotSupportedError\`        | \`-32005\`      | \`INVALID_ARGUMENT\`    | \`400 Bad Request\`           |
| \`InvalidAgentResponseError\`           | \`-32006\`      | \`INTERNAL\`            | \`500 Internal Server Error\` |
| \`ExtendedAgentCardNotConfiguredError\` | \`-32007\`      | \`FAILED_PRECONDITION\` | \`400 Bad Request\`           |
| \`ExtensionSupportRequiredError\`       | \`-32008\`      | \`FAILED_PRECONDITION\` | \`400 Bad Request\`           |
| \`VersionNotSupportedError\`            | \`-32009\`      | \`FAILED_PRECONDITION\` | \`400 Bad Request\`           |
`

const printed = section54.trim().split("\n").slice(2).map((line) => {
  const [name, code, grpc, http] = line.split("|").slice(1, 5).map((cell) => cell.trim().replace(/`/g, ""))
  return { name: name!.replace(/Error$/, ""), jsonRpc: Number(code), grpc, http: Number(http!.split(" ")[0]) }
})

// §3.3.2: the reason is the error's name in UPPER_SNAKE_CASE, without "Error".
const upperSnake = (name: string) => name.replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase()

describe("the error table", () => {
  it("has §5.4's nine rows of A2A 1.0.1, in its order, each with its reason", () => {
    expect(printed).toHaveLength(9)
    expect(ErrorTable.a2aRows.map(({ grpc, http, jsonRpc, name }) => ({ name, jsonRpc, grpc, http }))).toEqual(printed)
    for (const row of ErrorTable.a2aRows) {
      expect(row.reason).toBe(upperSnake(row.name))
      expect(row.httpStatus).toBe(row.grpc)
    }
  })

  it("has §9.5's standard JSON-RPC errors, with the gRPC and HTTP statuses google.rpc.Code gives them", () => {
    expect(
      ErrorTable.standardRows.map((
        { grpc, http, httpStatus, jsonRpc, name }
      ) => [name, jsonRpc, grpc, http, httpStatus])
    )
      .toEqual([
        ["ParseError", -32700, "INVALID_ARGUMENT", 400, "INVALID_ARGUMENT"],
        ["InvalidRequest", -32600, "INVALID_ARGUMENT", 400, "INVALID_ARGUMENT"],
        // A path that no operation serves is not found on HTTP; an unknown method, UNIMPLEMENTED on gRPC.
        ["MethodNotFound", -32601, "UNIMPLEMENTED", 404, "NOT_FOUND"],
        ["InvalidParams", -32602, "INVALID_ARGUMENT", 400, "INVALID_ARGUMENT"],
        ["InternalError", -32603, "INTERNAL", 500, "INTERNAL"]
      ])
  })

  it("names every error as A2AClientError does, by the same JSON-RPC code", () => {
    const table = [...ErrorTable.a2aRows, ...ErrorTable.standardRows]
    expect(Object.fromEntries(table.map((row) => [row.jsonRpc, row.name]))).toEqual(A2AClientError.protocolErrorNames)
    for (const row of table) expect(ErrorTable.rows[row.name]).toBe(row)
  })

  it("finds the row of each SDK error class by its reason, with the SDK's JSON-RPC code", () => {
    const errors: ReadonlyArray<[A2AError, ErrorTable.Name]> = [
      [new TaskNotFoundError(), "TaskNotFound"],
      [new TaskNotCancelableError(), "TaskNotCancelable"],
      [new PushNotificationNotSupportedError(), "PushNotificationNotSupported"],
      [new UnsupportedOperationError(), "UnsupportedOperation"],
      [new ContentTypeNotSupportedError(), "ContentTypeNotSupported"],
      [new InvalidAgentResponseError(), "InvalidAgentResponse"],
      [new ExtendedAgentCardNotConfiguredError(), "ExtendedAgentCardNotConfigured"],
      [new ExtensionSupportRequiredError(), "ExtensionSupportRequired"],
      [new VersionNotSupportedError(), "VersionNotSupported"],
      [new RequestMalformedError(), "InvalidParams"],
      [new A2AError("internal"), "InternalError"]
    ]
    for (const [error, name] of errors) {
      expect(ErrorTable.ofReason(error.reason)?.name).toBe(name)
      expect(ErrorTable.rows[name].jsonRpc).toBe(toJsonRpcError(error).code)
    }
  })

  it("reads a JSON-RPC code from the reason of an A2A error only: a shared or unknown reason has none", () => {
    expect(ErrorTable.ofA2AReason("VERSION_NOT_SUPPORTED")).toBe(ErrorTable.rows.VersionNotSupported)
    // Parse errors, invalid requests and invalid params all say INVALID_PARAMS: the code tells them apart.
    expect(ErrorTable.ofA2AReason("INVALID_PARAMS")).toBeUndefined()
    expect(ErrorTable.ofA2AReason("INTERNAL_ERROR")).toBeUndefined()
    expect(ErrorTable.ofReason("INVALID_PARAMS")).toBe(ErrorTable.rows.InvalidParams)
    expect(ErrorTable.ofReason("NOT_A_REASON")).toBeUndefined()
    expect(ErrorTable.ofA2AReason("NOT_A_REASON")).toBeUndefined()
  })

  it("reads the A2A ErrorInfo's reason among details, whatever else they hold; another domain's is none", () => {
    const info = (reason: unknown) => ({ "@type": ERROR_INFO_TYPE, reason, domain: "a2a-protocol.org" })
    expect(ErrorTable.reasonIn([{ "@type": "type.googleapis.com/google.rpc.RetryInfo" }, info("TASK_NOT_FOUND")]))
      .toBe("TASK_NOT_FOUND")
    const ours = { "@type": ERROR_INFO_TYPE, reason: "NOT_FOUND", domain: "effect-a2a" }
    for (
      const details of [
        undefined,
        null,
        "TASK_NOT_FOUND",
        {},
        [],
        [null, 1],
        [info(7)],
        [{ reason: "TASK_NOT_FOUND" }],
        [ours]
      ]
    ) {
      expect(ErrorTable.reasonIn(details)).toBeUndefined()
    }
  })
})
