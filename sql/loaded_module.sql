-- 18+: the library's magic block names it and gives its version, which is the extension's
-- default_version (the Makefile passes it from the control file).
SELECT ck.sqlstate_action('40001') IS NOT NULL AS called;
SELECT module_name, version = (SELECT default_version FROM pg_available_extensions WHERE name = 'concurrency_kit')
       AS version_is_default_version
FROM pg_get_loaded_modules() WHERE module_name = 'concurrency_kit';
