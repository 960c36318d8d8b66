// The one formatter. Wide lines, as the code was written: most of it reads better unbroken.
export default { printWidth: 180, singleQuote: true, trailingComma: 'all', arrowParens: 'always' };
