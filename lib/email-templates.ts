// The mails of the welcome sequence: each has a subject, an HTML part and a text part, and both
// parts end with the unsubscribe link (the List-Unsubscribe headers carry it too).
import type { EmailStepKey } from './email-sequence.js'

export interface RenderedEmail {
  subject: string
  html: string
  text: string
}

interface StepCopy {
  subject: string
  paragraphs: string[]
  action?: { label: string, path: string }
}

const COPY: Record<EmailStepKey, StepCopy> = {
  welcome: {
    subject: 'Welcome to Calendar',
    paragraphs: ['Your calendar is ready. Add your first event, and it is there on every device you sign in on.'],
    action: { label: 'Open your calendar', path: '/day' }
  },
  shortcuts: {
    subject: 'Your calendar on every device',
    paragraphs: ['Sign in on your phone and your computer: an event you add or change on one shows up on the other a moment later.']
  },
  'connect-calendar': {
    subject: 'Bring your other calendars along',
    paragraphs: ['Connect a Google, Microsoft or CalDAV calendar, and its events show up beside yours, kept in sync both ways.'],
    action: { label: 'Connect a calendar', path: '/day' }
  },
  booking: {
    subject: 'Plan your week in one place',
    paragraphs: ['A few minutes on a Monday morning: put the week\'s meetings, errands and time for yourself in the calendar, and see it at a glance.'],
    action: { label: 'Plan your week', path: '/day' }
  }
}

function escapeHtml (value: string): string {
  return value.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`)
}

/**
 * A name as the greeting may say it: letters of any script, spaces, hyphens, apostrophes and dots,
 * at most 40 characters. Anything else (a URL, a sentence with punctuation, markup) is not a name,
 * and a mail client would turn a URL in the text part into a link: the greeting is then plain.
 */
export function greetableName (name: string | undefined): string | null {
  const trimmed = name?.trim().replace(/\s+/g, ' ') ?? ''
  return /^[\p{L}\p{M}][\p{L}\p{M} .'’-]{0,39}$/u.test(trimmed) && !/\.\S/.test(trimmed) ? trimmed : null
}

export function renderEmail (step: EmailStepKey, input: { name: string | undefined, webUrl: string, unsubscribeLink: string }): RenderedEmail {
  const copy = COPY[step]
  const name = greetableName(input.name)
  const greeting = name === null ? 'Hello,' : `Hello ${name},`
  const action = copy.action === undefined ? undefined : { label: copy.action.label, url: new URL(copy.action.path, input.webUrl).toString() }
  const text = [
    greeting,
    '',
    ...copy.paragraphs.flatMap((paragraph) => [paragraph, '']),
    ...(action === undefined ? [] : [`${action.label}: ${action.url}`, '']),
    '--',
    `You get these mails because you signed up for Calendar. Unsubscribe: ${input.unsubscribeLink}`
  ].join('\n')
  const html = [
    '<!doctype html><html><body>',
    `<p>${escapeHtml(greeting)}</p>`,
    ...copy.paragraphs.map((paragraph) => `<p>${escapeHtml(paragraph)}</p>`),
    ...(action === undefined ? [] : [`<p><a href="${escapeHtml(action.url)}">${escapeHtml(action.label)}</a></p>`]),
    `<p>You get these mails because you signed up for Calendar. <a href="${escapeHtml(input.unsubscribeLink)}">Unsubscribe</a></p>`,
    '</body></html>'
  ].join('\n')
  return { subject: copy.subject, html, text }
}
