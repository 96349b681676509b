"""Published figures from committed results: store.py (the results files), sections.py (the generated
sections of README.md and docs/, and how to add one), one module of section generators per benchmark."""
