// axe-core in the page: the serious and critical violations, for the browser tests that check them.
import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import type { Page } from 'playwright-core'

const axeSource = await readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8')

export interface Violation { id: string, impact: string, help: string, nodes: string[] }

export async function seriousViolations (page: Page): Promise<Violation[]> {
  if (!await page.evaluate('typeof axe !== "undefined"')) await page.addScriptTag({ content: axeSource })
  const violations = await page.evaluate(`axe.run(document, { resultTypes: ['violations'] }).then((result) => result.violations.map((v) => ({
    id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((node) => node.target.join(' '))
  })))`) as Violation[]
  return violations.filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
}
