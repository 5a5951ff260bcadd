// The frame of the few HTML pages a stand-in shows; each provider gives its own look and words.

export const escapeHtml = (text: string): string =>
  text.replace(/[&<>"']/g, (char) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[char] ?? char)

/** A whole page; `style` is the provider's stylesheet, `body` already escaped. */
export function page (title: string, style: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>
${style}</style>
</head>
<body>
${body}
</body>
</html>
`
}
