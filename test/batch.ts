// Runs several test files in one process, one after another: `node --import=tsx test/batch.ts
// FILE...`. Loading the app's modules costs a process several seconds of a core, far more than
// most files' own tests; files that share a process pay it once. Each file's tests run to their
// end before the next file is loaded: the next file is loaded by a test queued after them, named
// FILE_END_PREFIX (test/batch-marks.ts) and the file, which tells the runner (test/run.ts) where
// a file's tests end. That test holds no assertion; the runner leaves it out of the counts.
import { createRequire } from 'node:module'
import { readdirSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { test } from 'tap'
import { forgetSessionLibraryConfiguration } from '../services/session-library/index.js'
import { FILE_END_PREFIX } from './batch-marks.js'

const require = createRequire(import.meta.url)

/**
 * The session library keeps the first configuration it is given for the whole process (its
 * recipes are singletons). Between two files, as between two processes, it is made new, so each
 * file's first app configures it with its own sign-in providers, stand-in addresses and origins.
 * The library allows that only in its test mode, which is on just for the reset.
 */
function resetSessionLibrary (): void {
  const library = dirname(require.resolve('supertokens-node/lib/build/supertokens.js'))
  process.env['TEST_MODE'] = 'testing'
  try {
    for (const recipe of readdirSync(join(library, 'recipe'))) {
      (require(join(library, 'recipe', recipe, 'recipe.js')) as { default: { reset: () => void } }).default.reset()
    }
    (require(join(library, 'supertokens.js')) as { default: { reset: () => void } }).default.reset()
  } finally {
    delete process.env['TEST_MODE']
  }
  forgetSessionLibraryConfiguration()
}

const files = process.argv.slice(2)
/**
 * Each file's own time limit (the runner gives the batch one per file, TAP_TIMEOUT in all). tap's
 * limit is the whole batch's, so a file that hangs would hold the run for every file's share;
 * past its own, the process ends and the runner reports the batch failed at that file.
 */
const FILE_LIMIT_MS = Number(process.env['TAP_TIMEOUT'] ?? 600 * files.length) * 1000 / Math.max(1, files.length)

async function load (remaining: string[]): Promise<void> {
  const [file, ...rest] = remaining
  if (file === undefined) return
  resetSessionLibrary()
  const limit = setTimeout(() => {
    process.stderr.write(`test/batch.ts: ${file} did not end within ${FILE_LIMIT_MS / 1000} s; its batch stops here\n`)
    process.exit(1)
  }, FILE_LIMIT_MS)
  limit.unref()
  let failure: unknown
  await import(pathToFileURL(resolve(file)).href).catch((error: unknown) => { failure = error })
  // Queued after the file's own tests: it runs once they have ended, and keeps the process's root
  // test from ending (it ends when idle) while the next file loads.
  test(`${FILE_END_PREFIX}${file}`, async (t) => {
    clearTimeout(limit)
    if (failure !== undefined) t.error(failure, `${file} loads`)
    await load(rest)
  })
}

await load(files)
