// Preloaded into a child process (`node --import`), after tsx: appends the URL of every module the process
// loads to the file `RECORD_MODULES` names, one a line, ESM imports and CommonJS requires alike. Written as each
// load happens, from the loader's own thread, so nothing is lost when the process exits.
import { appendFileSync } from "node:fs"
import Module, { register } from "node:module"
import { pathToFileURL } from "node:url"

const file = process.env.RECORD_MODULES
if (file === undefined) throw new Error("recordModules.mjs: RECORD_MODULES names no file")

register(
  "data:text/javascript," + encodeURIComponent(
    `import { appendFileSync } from "node:fs"
export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context)
  if (resolved.url.startsWith("file:")) appendFileSync(${JSON.stringify(file)}, resolved.url + "\\n")
  return resolved
}`
  )
)

// A require from CommonJS code does not pass through the hook above on Node 20.
const resolveFilename = Module._resolveFilename
Module._resolveFilename = function(...args) {
  const resolved = resolveFilename.apply(this, args)
  if (resolved.startsWith("/")) appendFileSync(file, pathToFileURL(resolved).href + "\n")
  return resolved
}
