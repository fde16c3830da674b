this is not python: 1 +
