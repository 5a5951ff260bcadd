// A vendor's SDK is loaded only when its block is configured: an install without billing or
// analytics never loads Stripe's or PostHog's package (their import alone costs every start). A
// child process imports every module the two services load at start, with a module hook that
// refuses the SDKs; the same hook must refuse the Stripe client itself, or it proves nothing.
import { readdirSync } from 'node:fs'
import { join, relative } from 'node:path'
import { test, type Test } from 'tap'
import { startScript, writeTempFile } from '../processes.js'

const root = new URL('../../', import.meta.url).pathname
const REFUSED = ['stripe', 'posthog-node']

/** Every TypeScript file under the directories, as paths from the repository's root. */
function sources (...directories: string[]): string[] {
  return directories.flatMap((directory) => readdirSync(join(root, directory), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => relative(root, join(entry.parentPath, entry.name))))
}

async function importAll (t: Test, files: string[]): Promise<{ code: number | null, output: string }> {
  const hooks = await writeTempFile('refuse-sdks.mjs', `
    export async function resolve (specifier, context, next) {
      if (${JSON.stringify(REFUSED)}.includes(specifier)) throw new Error('refused to load ' + specifier)
      return await next(specifier, context)
    }`)
  const register = await writeTempFile('register.mjs', `import { register } from 'node:module'\nregister(${JSON.stringify(`file://${hooks}`)})\n`)
  const script = await writeTempFile('import-all.mjs', files.map((file) => `await import(${JSON.stringify(join(root, file))})`).join('\n') + '\nconsole.log("imported")\n')
  const child = startScript(t, script, [], { NODE_OPTIONS: `--import ${register}` })
  const code = await child.exited
  return { code, output: child.output() }
}

test('the modules both services load at start import no vendor SDK', async (t) => {
  const files = [
    'app.ts', 'sync/app.ts',
    ...sources('plugins', 'routes', 'services', 'stores', 'sync/plugins', 'sync/routes', 'sync/services', 'sync/stores'),
    'clients/analytics.ts'
  ]
  const { code, output } = await importAll(t, files)
  t.equal(code, 0, `imported ${files.length} modules without Stripe's or PostHog's package: ${output.slice(-400)}`)
  t.match(output, /imported/)
})

test('the hook does refuse them: the Stripe and PostHog clients cannot be imported under it', async (t) => {
  for (const client of ['clients/stripe.ts', 'clients/posthog.ts']) {
    const { code, output } = await importAll(t, [client])
    t.not(code, 0, `${client} fails to load`)
    t.match(output, /refused to load (stripe|posthog-node)/)
  }
})
