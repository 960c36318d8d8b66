export type SqlDialect = 'postgres' | 'mysql';

/** Statements that only read: a SELECT, WITH … SELECT, VALUES and TABLE (writes in a WITH fail in the read-only transaction). */
const READ_STATEMENTS = new Set(['SELECT', 'WITH', 'VALUES', 'TABLE']);

/** The end of a quoted run that started at `start` (after its opening quote), honouring doubled quotes and, where the dialect has them, backslashes. */
function endOfQuoted(sql: string, start: number, quote: string, backslash: boolean): number {
  for (let i = start; i < sql.length; i++) {
    if (backslash && sql[i] === '\\') i++;
    else if (sql[i] === quote) {
      if (sql[i + 1] !== quote) return i + 1;
      i++;
    }
  }
  return sql.length;
}

/** The query's statements, with strings, quoted names and comments blanked out (so a `;` or a keyword in them counts for nothing). */
function statementsOf(sql: string, dialect: SqlDialect): string[] {
  const statements: string[] = [];
  let current = '';
  let i = 0;
  while (i < sql.length) {
    const c = sql[i]!;
    const next = sql[i + 1];
    if ((c === '-' && next === '-' && (dialect === 'postgres' || /[\s]/.test(sql[i + 2] ?? ' '))) || (c === '#' && dialect === 'mysql')) {
      const end = sql.indexOf('\n', i);
      i = end < 0 ? sql.length : end;
      current += ' ';
    } else if (c === '/' && next === '*') {
      // PostgreSQL's block comments nest; MySQL's do not.
      let depth = 0;
      while (i < sql.length) {
        if (sql.startsWith('/*', i) && (dialect === 'postgres' || depth === 0)) {
          depth++;
          i += 2;
        } else if (sql.startsWith('*/', i)) {
          i += 2;
          if (--depth === 0) break;
        } else i++;
      }
      current += ' ';
    } else if (c === "'" || c === '"' || (c === '`' && dialect === 'mysql')) {
      const escapes = dialect === 'mysql' ? c !== '`' : c === "'" && /[eE]$/.test(current) && !/[\w$]$/.test(current.slice(0, -1));
      i = endOfQuoted(sql, i + 1, c, escapes);
      current += ' x ';
    } else if (c === '$' && dialect === 'postgres' && !/[\w$]$/.test(current)) {
      const tag = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/.exec(sql.slice(i))?.[0];
      if (tag) {
        const end = sql.indexOf(tag, i + tag.length);
        i = end < 0 ? sql.length : end + tag.length;
        current += ' x ';
      } else {
        current += c;
        i++;
      }
    } else if (c === ';') {
      statements.push(current);
      current = '';
      i++;
    } else {
      current += c;
      i++;
    }
  }
  statements.push(current);
  return statements.filter((s) => s.trim() !== '');
}

/**
 * Why a source's SQL is not one read-only query, or null when it is: the check a create request gets up front,
 * rather than the server's "syntax error at or near DELETE" from inside the cursor it is wrapped in.
 */
export function sqlQueryProblem(sql: string, dialect: SqlDialect): string | null {
  const statements = statementsOf(sql, dialect);
  if (statements.length === 0) return 'the query is empty; give one read-only SELECT';
  if (statements.length > 1) return `only one statement is allowed, a read-only SELECT; this query has ${statements.length}`;
  const first = /^[\s(]*([A-Za-z]+)/.exec(statements[0]!)?.[1]?.toUpperCase();
  if (first && READ_STATEMENTS.has(first)) return null;
  return `only one read-only SELECT is allowed (SELECT, WITH … SELECT, VALUES or TABLE)${first ? `, not ${first}` : ''}`;
}
